//! Bad input, as types: each variant names the bad value, so the command line prints one line
//! and tests match on the variant rather than on the words.

use thiserror::Error;

/// Input fragsim refuses: ranges, sizes, alignments, workloads, files.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum InputError {
    #[error("bad size range: start 0 (sizes must be at least 1 byte)")]
    RangeStartZero,
    #[error("bad size range: step 0")]
    RangeStepZero,
    #[error("bad size range: {start}..={end} is inverted (end below start)")]
    RangeInverted { start: u64, end: u64 },
    #[error("bad size range: end {end} is larger than {max} bytes")]
    RangeTooLarge { end: u64, max: u64 },
    #[error("bad size range '{text}': '{part}' is not a whole number")]
    RangeNotANumber { text: String, part: String },
    #[error("bad size range '{text}': write an inclusive range as A..=B:STEP")]
    RangeNotInclusive { text: String },
    #[error("bad max capacity {0}: the smallest F14 table holds 2 values")]
    CapacityTooSmall(u64),
    #[error(
        "bad max capacity {capacity}: more than {max} values is not a table this model can price"
    )]
    CapacityTooLarge { capacity: u64, max: u64 },
    #[error("bad value alignment {0}: must be a power of two up to 4096")]
    BadAlignment(u64),
    #[error("a table of {capacity} values of {value_size} bytes ({bytes} bytes) is larger than the largest size class")]
    TableTooLarge {
        capacity: u64,
        value_size: u64,
        bytes: u64,
    },
    #[error("bad vector count 0: need at least one vector")]
    NoVectors,
    #[error("bad element count 0: need at least one element per vector")]
    NoElements,
    #[error("bad element size {0}: must be 1, 2, 4, 8 or 16 bytes")]
    BadElementSize(u64),
    #[error("bad workload: {vectors} vectors x {elements} elements x {elem_bytes} bytes overflows the {max} byte limit")]
    WorkloadTooLarge {
        vectors: u64,
        elements: u64,
        elem_bytes: u64,
        max: u64,
    },
    #[error("malformed seed table {source_name}: {reason}")]
    MalformedSeedTable { source_name: String, reason: String },
    #[error("cannot read '{path}': {reason}")]
    Unreadable { path: String, reason: String },
}
