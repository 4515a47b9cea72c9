//! Bindings to the running jemalloc: `mallctl` reads (one layer, `ctl.rs`), private arenas
//! and binding a thread to one, `nallocx`, a running build's size classes (`build.rs`), one
//! arena's statistic MIBs (`arena_mibs.rs`), and the baton that runs a trace's calls on one
//! real thread per trace thread (`relay.rs`). Nothing here decides or models anything: the
//! comparisons with the models are in [`crate::check`].

pub(crate) mod arena_mibs;
mod build;
pub(crate) mod ctl;
pub(crate) mod relay;

pub use build::LiveBuild;
pub(crate) use build::LARGE_CLASS_CAP;
pub use ctl::in_private_arena;
pub use ctl::nallocx;
pub(crate) use ctl::read_isize;
pub use ctl::Api;
pub(crate) use ctl::ArenaUsage;
pub use ctl::PrivateArena;
