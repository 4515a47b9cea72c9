//! Real containers as exact allocation-trace generators: each model replays what one
//! container asks of its allocator while it grows one element at a time, then is dropped.
//!
//! [`spec::ContainerSpec`] names a container and its element types; [`growth::grow`] runs
//! its model to N elements, passing each [`crate::trace::Event`] on and pricing the steps
//! under a jemalloc build; `compare` puts containers side by side.

pub(crate) mod absl;
pub(crate) mod compare;
pub(crate) mod core;
pub(crate) mod f14;
pub(crate) mod growth;
pub(crate) mod rust_std;
pub(crate) mod section;
pub(crate) mod spec;
pub(crate) mod tables;
pub use rust_std::Hashbrown;
pub use section::write_section;

pub use self::core::ElementType;
pub use self::core::KeyOrder;
pub use self::core::Tracer;
pub use self::growth::grow;
pub use self::spec::ContainerKind;
pub use self::spec::ContainerSpec;
