//! The model against an allocator's own `nallocx` for every request from 0 up to a bound
//! (4 GiB in `validate --exhaustive`), split across all cores.
//!
//! `nallocx` is taken as a parameter so this module does not depend on `live`; the caller
//! passes `fragsim::live::nallocx`. It is called from several threads at once, which jemalloc
//! allows (5.3.1 as bundled by tikv-jemalloc-sys 0.7.1; paths under its `jemalloc/`):
//! * `je_nallocx` (src/jemalloc.c:2941-2964) is `malloc_init()`, `tsdn_fetch()`, `inallocx`.
//! * `malloc_init` (src/jemalloc.c:320-325) is a flag check once jemalloc is initialised; the
//!   first initialisation is serialised by `init_lock` (src/jemalloc.c:1207). Here jemalloc is
//!   the global allocator, so it is initialised before any worker thread exists.
//! * `tsdn_fetch` (include/jemalloc/internal/tsd.h:165-171, via `tsd_fetch_impl` at
//!   118-133) returns the calling thread's own thread-specific data; a thread's first call
//!   sets up its own (src/tsd.c:282 `tsd_fetch_slow`), never another thread's.
//! * `inallocx` (src/jemalloc.c:2895-2902) -> `aligned_usize_get` with alignment 0
//!   (src/jemalloc.c:1389-1415) -> `sz_s2u` (include/jemalloc/internal/sz.h:373-378): a
//!   read of the size-class tables (`sz_s2u_lookup`, sz.h:360) or arithmetic
//!   (`sz_s2u_compute`, sz.h:328-357) plus a read of `opt_disable_large_size_classes`
//!   (src/jemalloc.c:133); all are written once during initialisation (`sz_boot`,
//!   src/sz.c:110; option parsing) and only read after.
//!
//! So nallocx is a pure function of the size, safe from any thread. (`opt_cache_oblivious`
//! is not read on this path: it only sets `sz_large_pad`, used by aligned requests and the
//! allocation itself, so a `--disable-cache-oblivious` build answers the same.)

use crate::sizeclass::SizeClasses;
use rayon::prelude::*;

/// Requests per unit of parallel work (and per progress report): small enough to balance
/// two to many cores, large enough that the reports cost nothing.
pub const BLOCK: u64 = 1 << 16;
/// Mismatches listed in an `ExhaustiveResult` (the smallest requests first).
pub const LISTED_MISMATCHES: usize = 20;
/// Requests looked up together by the batch lookup: fits in L1 beside its answers.
const BATCH: usize = 1024;

/// One request where the model and the allocator disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub request: u64,
    /// The model's usable size; `None` past its largest class.
    pub predicted: Option<u64>,
    /// What `nallocx` answered (0 when it refuses the size).
    pub measured: u64,
}

/// The outcome of [`exhaustive_check`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExhaustiveResult {
    /// Every request `0..=max_request` was compared.
    pub max_request: u64,
    pub compared: u64,
    pub mismatched: u64,
    /// The first [`LISTED_MISMATCHES`] mismatches, by request.
    pub first_mismatches: Vec<Mismatch>,
}

impl ExhaustiveResult {
    pub fn passed(&self) -> bool {
        self.mismatched == 0
    }
}

/// Compares `classes` with `nallocx` for every request `0..=max_request` on all of rayon's
/// threads; the model side uses the batch lookup, and a model answer past its largest class
/// is compared as 0 (what nallocx answers there). `progress` is called from the worker
/// threads with the number of requests just compared (in blocks of [`BLOCK`]; the calls
/// add up to `max_request + 1`), so a caller can advance a progress bar.
pub fn exhaustive_check(
    classes: &SizeClasses,
    max_request: u64,
    nallocx: impl Fn(u64) -> u64 + Sync,
    progress: impl Fn(u64) + Sync,
) -> ExhaustiveResult {
    let blocks = max_request / BLOCK + 1;
    let tally = (0..blocks)
        .into_par_iter()
        .fold(Tally::default, |mut tally, block| {
            let first = block * BLOCK;
            let last = first.saturating_add(BLOCK - 1).min(max_request);
            tally.check_range(classes, first, last, &nallocx);
            progress(last - first + 1);
            tally
        })
        .reduce(Tally::default, Tally::merge);
    ExhaustiveResult {
        max_request,
        compared: tally.compared,
        mismatched: tally.mismatched,
        first_mismatches: tally.first_mismatches,
    }
}

/// Counts of one worker's share (its blocks are contiguous and visited in order, so its
/// first mismatches are its smallest).
#[derive(Default)]
struct Tally {
    compared: u64,
    mismatched: u64,
    first_mismatches: Vec<Mismatch>,
}

impl Tally {
    fn check_range(
        &mut self,
        classes: &SizeClasses,
        first: u64,
        last: u64,
        nallocx: &impl Fn(u64) -> u64,
    ) {
        let mut requests = [0u64; BATCH];
        let mut predicted = [0u64; BATCH];
        let mut start = first;
        loop {
            let len = (last - start).min(BATCH as u64 - 1) as usize + 1;
            for (i, slot) in requests[..len].iter_mut().enumerate() {
                *slot = start + i as u64;
            }
            classes.usable_sizes(&requests[..len], &mut predicted[..len]);
            for (&request, &predicted) in requests[..len].iter().zip(&predicted[..len]) {
                let measured = nallocx(request);
                if measured != predicted {
                    self.record(request, predicted, measured);
                }
            }
            self.compared += len as u64;
            let end = start + (len as u64 - 1);
            if end == last {
                break;
            }
            start = end + 1;
        }
    }

    #[cold]
    fn record(&mut self, request: u64, predicted: u64, measured: u64) {
        self.mismatched += 1;
        if self.first_mismatches.len() < LISTED_MISMATCHES {
            self.first_mismatches.push(Mismatch {
                request,
                // The batch lookup's 0 is "past the largest class": no class is 0 bytes.
                predicted: (predicted != 0).then_some(predicted),
                measured,
            });
        }
    }

    fn merge(mut self, other: Tally) -> Tally {
        self.compared += other.compared;
        self.mismatched += other.mismatched;
        self.first_mismatches.extend(other.first_mismatches);
        self.first_mismatches.sort_by_key(|m| m.request);
        self.first_mismatches.truncate(LISTED_MISMATCHES);
        self
    }
}
