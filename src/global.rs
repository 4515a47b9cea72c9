//! The global allocator of fragsim's binaries.
//!
//! A program has exactly one `#[global_allocator]`, so a library that set one would forbid
//! every program linking it from choosing its own (for instance a
//! [`crate::trace::RecordingAllocator`]). The crate therefore sets none: the `fragsim` binary
//! and each test or benchmark that measures jemalloc through the global allocator says
//! `fragsim::use_jemalloc!();`, and the measurements that need it check [`jemalloc_is_global`]
//! and fail loudly rather than measure another allocator.

pub use tikv_jemallocator::Jemalloc;

/// Installs jemalloc as this program's global allocator.
#[macro_export]
macro_rules! use_jemalloc {
    () => {
        #[global_allocator]
        static FRAGSIM_GLOBAL_ALLOCATOR: $crate::global::Jemalloc = $crate::global::Jemalloc;
    };
}

/// True if allocations through `std::alloc` (Box, Vec, ...) reach this crate's jemalloc,
/// directly or through a wrapper: its per-thread byte counter must grow by an allocation.
pub fn jemalloc_is_global() -> bool {
    const PROBE: usize = 1 << 20;
    let Ok(counter) = tikv_jemalloc_ctl::thread::allocatedp::read() else {
        return false;
    };
    let before = counter.get();
    let probe = std::hint::black_box(Vec::<u8>::with_capacity(PROBE));
    let after = counter.get();
    drop(probe);
    after >= before + PROBE as u64
}
