//! The global allocator of fragsim's binaries.
//!
//! A program has exactly one `#[global_allocator]`, so a library that set one would forbid
//! every program linking it from choosing its own (for instance a
//! [`crate::trace::RecordingAllocator`]). The crate therefore sets none: the `fragsim` binary
//! and each test or benchmark that measures jemalloc through the global allocator says
//! `fragsim::use_jemalloc!();`, and the measurements that need it check [`jemalloc_is_global`]
//! and fail loudly rather than measure another allocator.

use std::alloc::{GlobalAlloc, Layout};

pub use tikv_jemallocator::Jemalloc;

/// Installs jemalloc as this program's global allocator.
#[macro_export]
macro_rules! use_jemalloc {
    () => {
        #[global_allocator]
        static FRAGSIM_GLOBAL_ALLOCATOR: $crate::global::QuantumSafe =
            $crate::global::QuantumSafe($crate::global::Jemalloc);
    };
}

/// jemalloc as Rust's global allocator on any quantum.
///
/// `tikv_jemallocator` asks for 16-byte alignment with plain `malloc` whenever the size is at
/// least 16, trusting C's `max_align_t`. A jemalloc built with `--with-lg-quantum=3` (the
/// `quantum8` validation variant) breaks that trust: classes 24, 40 and 56 hand out 8-aligned
/// regions, and hashbrown's 16-aligned control bytes then fault. Rounding such a request up
/// to a multiple of 16 lands it in a class that is a multiple of 16, whose regions are 16-aligned
/// (slabs are page-aligned). On a 16-byte quantum every class is already a multiple of 16, so
/// the rounded request gets the same class: allocations and statistics are unchanged there.
pub struct QuantumSafe(pub Jemalloc);

fn quantum_safe(layout: Layout) -> Layout {
    if layout.align() == 16 {
        // Never overflows: a `Layout`'s size rounded up to its alignment fits in isize.
        layout.pad_to_align()
    } else {
        layout
    }
}

fn padded(size: usize, align: usize) -> usize {
    if align == 16 {
        size.next_multiple_of(16)
    } else {
        size
    }
}

// SAFETY: every call forwards to `Jemalloc` with the same layout transformation on allocation,
// reallocation and deallocation, so jemalloc always sees consistent sizes.
unsafe impl GlobalAlloc for QuantumSafe {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.0.alloc(quantum_safe(layout))
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.0.alloc_zeroed(quantum_safe(layout))
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.0.dealloc(ptr, quantum_safe(layout))
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.0
            .realloc(ptr, quantum_safe(layout), padded(new_size, layout.align()))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    // Hand-derived: hashbrown's table for 4 buckets of 8-byte entries asks 32 + 4 + 16 = 52
    // bytes at 16-byte alignment; a quantum-8 jemalloc serves 52 from class 56, 8-aligned.
    #[test]
    fn a_16_aligned_request_is_padded_to_a_multiple_of_16() {
        let l = quantum_safe(Layout::from_size_align(52, 16).unwrap());
        assert_eq!((l.size(), l.align()), (64, 16));
        assert_eq!(padded(52, 16), 64);
        assert_eq!(padded(64, 16), 64);
    }

    #[test]
    fn other_alignments_are_left_alone() {
        for (size, align) in [(24, 8), (52, 4), (100, 32), (1, 1)] {
            let l = quantum_safe(Layout::from_size_align(size, align).unwrap());
            assert_eq!((l.size(), l.align()), (size, align));
            assert_eq!(padded(size, align), size);
        }
    }
}
