//! What fragsim computes and measures with the size-class model: the F14 sweeps and the
//! seed's own model ([`sweep`]), and the second seed's scenario of vectors built in a bump
//! arena against the general allocator ([`bump_arena`]).

pub mod bump_arena;
pub mod sweep;
