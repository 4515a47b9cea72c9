//! Predicted footprint of the three strategies.

use super::BumpReplay;
use crate::error::InputError;
use crate::sizeclass::SizeClasses;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// The workload: `vectors` inner vectors of `elements` elements of `elem_bytes` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BumpArenaSpec {
    pub vectors: u64,
    pub elements: u64,
    pub elem_bytes: u64,
}

/// Largest total the model accepts (1 TiB): beyond that it is a typo, not a workload.
const MAX_TOTAL_BYTES: u64 = 1 << 40;

impl BumpArenaSpec {
    /// The seed's workload: a million vectors of 100 ints.
    pub fn seed() -> Self {
        BumpArenaSpec {
            vectors: 1_000_000,
            elements: 100,
            elem_bytes: 4,
        }
    }

    /// Checks the spec; element sizes are powers of two up to 16 (the element types we can
    /// run for real).
    pub fn validate(&self) -> Result<(), InputError> {
        if self.vectors == 0 {
            return Err(InputError::NoVectors);
        }
        if self.elements == 0 {
            return Err(InputError::NoElements);
        }
        if !matches!(self.elem_bytes, 1 | 2 | 4 | 8 | 16) {
            return Err(InputError::BadElementSize(self.elem_bytes));
        }
        let inner = self.elements.checked_mul(self.elem_bytes);
        let total = inner.and_then(|b| b.checked_mul(self.vectors));
        match total {
            Some(t) if t <= MAX_TOTAL_BYTES => Ok(()),
            _ => Err(InputError::WorkloadTooLarge {
                vectors: self.vectors,
                elements: self.elements,
                elem_bytes: self.elem_bytes,
                max: MAX_TOTAL_BYTES,
            }),
        }
    }

    /// Bytes of one inner vector's buffer.
    pub(crate) fn inner_bytes(&self) -> u64 {
        self.elements * self.elem_bytes
    }
}

/// How the vectors are allocated and released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// `Vec<Vec<T>>`: one malloc per inner vector, one free each on reset.
    General,
    /// Everything in a `bumpalo::Bump`; reset runs every inner destructor, then frees chunks.
    Bump,
    /// The same arena; reset skips the inner destructors and frees the chunks.
    BumpNoFree,
}

impl Strategy {
    pub const ALL: [Strategy; 3] = [Strategy::General, Strategy::Bump, Strategy::BumpNoFree];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::General => "general allocator",
            Strategy::Bump => "monotonic arena",
            Strategy::BumpNoFree => "no-free arena",
        }
    }
}

/// The model's numbers for one strategy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prediction {
    pub strategy: Strategy,
    /// Bytes the program needs: the element bytes plus the outer array of vector headers.
    pub ideal: u64,
    /// Usable bytes jemalloc hands out.
    pub usable: u64,
    /// Bytes of active pages in an otherwise empty arena.
    pub active: u64,
    /// malloc calls to build (free calls to reset are the same number).
    pub allocator_calls: u64,
    /// bumpalo's `allocated_bytes` (arena strategies).
    pub bump_allocated: Option<u64>,
    /// Each chunk the arena asks jemalloc for (arena strategies).
    pub chunk_requests: Vec<u64>,
}

/// Predicts all three strategies. `header_bytes` are the sizes of one element of the outer
/// array: a `Vec<T>` for the general allocator, a `bumpalo::collections::Vec<T>` in the arena.
pub fn predict(
    classes: &SizeClasses,
    spec: &BumpArenaSpec,
    std_header_bytes: u64,
    bump_header_bytes: u64,
) -> Result<Vec<Prediction>> {
    spec.validate()?;
    let inner = spec.inner_bytes();
    let too_big = || anyhow::anyhow!("a block is larger than the largest size class");
    let outer = spec.vectors * std_header_bytes;
    let requests = [(outer, 1), (inner, spec.vectors)];
    let general = Prediction {
        strategy: Strategy::General,
        ideal: spec.vectors * inner + outer,
        usable: classes.usable_size(outer).ok_or_else(too_big)?
            + spec.vectors * classes.usable_size(inner).ok_or_else(too_big)?,
        active: classes.active_bytes_of(&requests).ok_or_else(too_big)?,
        allocator_calls: spec.vectors + 1,
        bump_allocated: None,
        chunk_requests: Vec::new(),
    };

    let mut replay = BumpReplay::new();
    replay.alloc(spec.vectors * bump_header_bytes, 8);
    replay.alloc_many(inner, spec.elem_bytes, spec.vectors);
    let chunk_requests: Vec<u64> = replay.chunk_requests().collect();
    let mut usable = 0;
    for &c in &chunk_requests {
        usable += classes.usable_size(c).ok_or_else(too_big)?;
    }
    let per_chunk: Vec<(u64, u64)> = chunk_requests.iter().map(|&c| (c, 1)).collect();
    let arena = Prediction {
        strategy: Strategy::Bump,
        ideal: spec.vectors * inner + spec.vectors * bump_header_bytes,
        usable,
        active: classes.active_bytes_of(&per_chunk).ok_or_else(too_big)?,
        allocator_calls: chunk_requests.len() as u64,
        bump_allocated: Some(replay.allocated_bytes()),
        chunk_requests,
    };
    let no_free = Prediction {
        strategy: Strategy::BumpNoFree,
        ..arena.clone()
    };
    Ok(vec![general, arena, no_free])
}
