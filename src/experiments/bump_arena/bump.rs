//! bumpalo's chunk policy (bumpalo 3.x, `src/lib.rs`: `new_chunk_memory_details` and
//! `alloc_layout_slow`), replayed without allocating, so the arena's footprint can be predicted.
//!
//! A chunk holds `size_without_footer` bytes for allocations plus a 48-byte footer. The first
//! chunk aims at 512 bytes including the footer and an assumed 16 bytes of malloc overhead;
//! each new chunk is at least twice the previous one (or the request, if larger). Below 4 KiB
//! the chunk plus overhead is rounded to a power of two; above, to whole 4 KiB pages.
//! jemalloc has no per-allocation header, so each chunk request ends 16 bytes short of a power
//! of two or a page multiple: those 16 bytes per chunk are the only cost of the assumption.

/// bumpalo's `ChunkFooter`: five pointer-sized fields plus a `Layout`, 16-aligned.
pub const FOOTER_SIZE: u64 = 48;
/// bumpalo's assumed malloc overhead per chunk.
pub const MALLOC_OVERHEAD: u64 = 16;
const CHUNK_ALIGN: u64 = 16;
const OVERHEAD: u64 = (MALLOC_OVERHEAD + FOOTER_SIZE).div_ceil(CHUNK_ALIGN) * CHUNK_ALIGN;
const FIRST_ALLOCATION_GOAL: u64 = 512;
const DEFAULT_CHUNK_SIZE_WITHOUT_FOOTER: u64 = FIRST_ALLOCATION_GOAL - OVERHEAD;
const TYPICAL_PAGE_SIZE: u64 = 4096;

/// The chunks a `bumpalo::Bump` would allocate for a sequence of allocations.
#[derive(Clone, Debug, Default)]
pub struct BumpReplay {
    /// Usable bytes of each chunk (bumpalo's `allocated_bytes` is their sum).
    pub chunks: Vec<u64>,
    /// Offset of the bump finger in the current chunk (it moves down towards 0).
    finger: u64,
}

fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

impl BumpReplay {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replays one allocation of `size` bytes aligned to `align` (a power of two).
    pub fn alloc(&mut self, size: u64, align: u64) {
        if !self.chunks.is_empty() {
            if let Some(rest) = self.finger.checked_sub(size) {
                // Chunks start 16-aligned, so offsets align as addresses do.
                self.finger = rest & !(align - 1);
                return;
            }
        }
        let previous = self.chunks.last().copied().unwrap_or(0);
        let base = (previous * 2).max(size.max(DEFAULT_CHUNK_SIZE_WITHOUT_FOOTER));
        let requested = round_up(size, CHUNK_ALIGN.max(align));
        let wanted = base.max(requested);
        let without_footer = if wanted < TYPICAL_PAGE_SIZE {
            (wanted + OVERHEAD).next_power_of_two() - OVERHEAD
        } else {
            round_up(wanted + OVERHEAD, TYPICAL_PAGE_SIZE) - OVERHEAD
        };
        self.chunks.push(without_footer);
        self.finger = without_footer - size;
        self.finger &= !(align - 1);
    }

    /// Replays `count` allocations of `size` bytes aligned to `align`, in as many steps as
    /// chunks: within a chunk, allocations whose size is a multiple of their alignment move the
    /// finger by `size` each, so a whole run of them is one division.
    pub(crate) fn alloc_many(&mut self, size: u64, align: u64, mut count: u64) {
        while count > 0 {
            let aligned =
                size > 0 && size.is_multiple_of(align) && self.finger.is_multiple_of(align);
            if aligned && !self.chunks.is_empty() {
                let fit = (self.finger / size).min(count);
                self.finger -= fit * size;
                count -= fit;
                if count == 0 {
                    return;
                }
            }
            // Opens a new chunk (or, for odd sizes and alignments, one step at a time).
            self.alloc(size, align);
            count -= 1;
            if size == 0 {
                // Zero-byte allocations never move the finger.
                return;
            }
        }
    }

    /// The byte counts bumpalo passes to the global allocator, one per chunk.
    pub fn chunk_requests(&self) -> impl Iterator<Item = u64> + '_ {
        self.chunks.iter().map(|c| c + FOOTER_SIZE)
    }

    /// bumpalo's `Bump::allocated_bytes`.
    pub fn allocated_bytes(&self) -> u64 {
        self.chunks.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::BumpReplay;

    /// The closed form against the one-at-a-time replay it replaces.
    #[test]
    fn alloc_many_equals_repeated_alloc() {
        for (first, size, align, count) in [
            (2400, 400, 4, 100_000),
            (24, 1, 1, 70_000),
            (800, 1600, 16, 5_000),
            (8, 24, 8, 33_333),
            (0, 12, 8, 10_000),
            (100, 3, 2, 9_999),
            (64, 4096, 16, 3),
        ] {
            let mut one = BumpReplay::new();
            let mut many = BumpReplay::new();
            one.alloc(first, 8);
            many.alloc(first, 8);
            for _ in 0..count {
                one.alloc(size, align);
            }
            many.alloc_many(size, align, count);
            assert_eq!(one.chunks, many.chunks, "{size} x {count} aligned {align}");
            assert_eq!(one.finger, many.finger, "{size} x {count} aligned {align}");
        }
    }
}
