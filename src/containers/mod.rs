//! Real containers as exact allocation-trace generators: each model replays what one
//! container asks of its allocator while it grows one element at a time, then is dropped.

pub mod core;
pub mod rust_std;

pub use self::core::{
    key_sequence, natural_align, ArrayPart, Container, ElementError, ElementType, KeyOrder,
    Tracer, TwoArrays,
};
