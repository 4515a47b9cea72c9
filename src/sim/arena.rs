//! The arena: objects, bins and slabs on top of the page allocator (jemalloc's `bin.c`,
//! `arena.c`, `large.c`).

use super::decay::Decay;
use super::pac::{OutOfAddressSpace, Pac, State};
use super::ph::{Heap, NIL};
use super::{ArenaStats, BinStats, SimError, Snapshot};
use crate::sizeclass::{AllocatorConfig, JemallocVersion, SizeClasses};
use crate::trace::Event;

mod build;
mod decay_check;
mod fill;
mod objects;
mod realloc;
mod view;
pub use decay_check::Eagerness;
pub(crate) use fill::SlabPlace;
pub use view::{ExtentTally, ExtentView};

/// A bin's slabs: the current one and the non-full heap keyed by (serial number, address).
/// Its statistics are in line: the fast paths then reach the bin's size and counts from
/// one index.
#[derive(Clone, Copy)]
struct Bin {
    cur: u32,
    nonfull: Heap,
    size: u64,
    nregs: u32,
    slab_size: u64,
    stats: BinStats,
}

/// Where a live object is: 8 bytes, as the object table is the model's main memory. A
/// request of 4 GiB or more and an alignment live in side tables (rare).
///
/// A request field at most `small_max` means a live small object in a slab, so that a
/// free tells the common case by one comparison: an unaligned request and its usable size
/// are small alike, aligned objects carry the sentinel, and so do dead ids (`DEAD`).
#[derive(Clone, Copy, Debug)]
struct Object {
    /// The slab (small) or extent (large) holding it; `NIL` when the id is not live. Which
    /// of the two, and the bin, are on the extent record.
    extent: u32,
    /// The requested size; `u32::MAX` means "see `big_requests`". Not read when `extent`
    /// is NIL.
    request: u32,
}

/// A dead id. Its request is any value above every `small_max`, so that a free of it leaves
/// the fast path; not `u32::MAX`, so that `DEAD` is no byte pattern: growing the table then
/// fills it with a vector loop rather than `memset`, whose `rep stosb` callgrind counts per
/// byte (a tenth of the model's instructions on cpp-maps, hiding its own costs).
const DEAD: Object = Object {
    extent: NIL,
    request: u32::MAX - 1,
};

/// Bin index by `(size + 7) >> 3` (see `ArenaModel::bin_of`).
type BinTable = [u8; BIN_TABLE_LEN];
/// Entries for sizes below 512 KiB (the model's limit on `small_max`, see `build.rs`).
const BIN_TABLE_LEN: usize = 1 << 16;

/// One jemalloc arena, modelled. See the module documentation of [`crate::sim`].
pub struct ArenaModel {
    classes: SizeClasses,
    pac: Pac,
    /// One slot per possible bin index (a `u8`), so that indexing by a bin index needs no
    /// bounds check on the fast path; the first `nbins` are the build's bins. In line, not
    /// boxed: the fast path reaches them without loading a pointer (16 KiB per model).
    bins: [Bin; 256],
    nbins: usize,
    objects: Vec<Object>,
    /// The statistics but `events` and `live_objects`, which follow from the counts below
    /// (see `events`).
    stats: ArenaStats,
    /// Allocations and frees applied, and the other events (reallocs, failed events).
    allocs: u64,
    frees: u64,
    others: u64,
    page: u64,
    large_pad: u64,
    /// Bin index by `(size + 7) >> 3` for small sizes (jemalloc's `sz_size2index_tab`,
    /// size 0 in bin 0 as `sz_size2index` has it); every class is a multiple of 8, so a
    /// request and its usable size index alike. Shared by every model of the build (see
    /// `build.rs`).
    bin_of: std::sync::Arc<BinTable>,
    /// `small_maxclass`, kept at hand for the fast path.
    small_max: u64,
    big_requests: std::collections::HashMap<u32, u64>,
    aligns: std::collections::HashMap<u32, u64>,
    /// Dirty and muzzy decay; `None`: both -1 (never purge but when told to purge all).
    decay: Option<Box<(Decay, Decay)>>,
}

/// Bytes of an arena's free page sets at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PageSets {
    /// Dirty extents (freed, still resident: `pdirty` x page).
    pub dirty_bytes: u64,
    /// Muzzy extents (purged lazily: `pmuzzy` x page; not in `stats.resident`).
    pub muzzy_bytes: u64,
    /// Retained extents (purged: mapped virtual memory only).
    pub retained_bytes: u64,
}

impl ArenaModel {
    /// A fresh arena of the build `config` (its version and `large_page_rounding` choose
    /// the page allocator's rules and the bins' pairing heap).
    pub fn new(config: AllocatorConfig) -> Result<ArenaModel, SimError> {
        let heap = match config.version {
            JemallocVersion::V5_3_0 => Heap::new_5_3_0(),
            JemallocVersion::V5_3_1 => Heap::default(),
        };
        Self::with_bin_heap(config, heap)
    }

    /// A fresh arena of `config` whose bins always hand out the non-full slab with the lowest
    /// (serial number, address), as 5.3.1 does: for 5.3.0 builds, the rule the model followed
    /// before it mirrored 5.3.0's heap. Kept to show where the two part ways.
    pub fn with_min_heap_bins(config: AllocatorConfig) -> Result<ArenaModel, SimError> {
        Self::with_bin_heap(config, Heap::default())
    }

    pub fn stats(&self) -> ArenaStats {
        ArenaStats {
            events: self.events(),
            live_objects: self.allocs - self.frees,
            ..self.stats
        }
    }

    pub fn bins(&self) -> Vec<BinStats> {
        self.bins[..self.nbins].iter().map(|b| b.stats).collect()
    }

    pub fn classes(&self) -> &SizeClasses {
        &self.classes
    }

    /// The statistics the live replay compares, at the current event.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            event: self.events(),
            allocated_bytes: self.stats.allocated_bytes,
            active_bytes: self.stats.active_bytes,
            bins: self.bins(),
        }
    }

    /// Applies one event. On error the arena is unchanged except for the event count.
    ///
    /// The common events (a small unaligned allocation, a free of a small object) take a
    /// short path that touches the object table, one bin and one slab; everything else goes
    /// through `apply_other` or `free_other`. Always inlined into the caller's loop: the
    /// common events then cost no call, and their `Result` is a flag in a register rather
    /// than a record in memory.
    #[inline(always)]
    pub fn apply(&mut self, event: Event) -> Result<(), SimError> {
        let small_max = self.small_max;
        match event {
            Event::Alloc { id, size, align } if align <= 1 && size <= small_max => {
                let i = id as usize;
                if i >= self.objects.len() {
                    self.grow_objects(i);
                }
                // SAFETY: `i < objects.len()`, just ensured; the table never shrinks.
                if unsafe { self.objects.get_unchecked(i) }.extent != NIL {
                    return Err(self.failed(|event| SimError::AllocOfLiveId { event, id }));
                }
                // SAFETY: `size <= small_max`.
                let b = unsafe { self.small_bin_index(size) };
                let Ok(slab) = self.malloc_small(b) else {
                    return Err(self.failed(|event| SimError::OutOfAddressSpace { event }));
                };
                // `size <= small_max` fits in the short request field.
                // SAFETY: as above (`malloc_small` does not touch the table).
                *unsafe { self.objects.get_unchecked_mut(i) } = Object {
                    extent: slab,
                    request: size as u32,
                };
                self.allocs += 1;
                self.stats.requested_bytes += size;
                Ok(())
            }
            Event::Free { id } => {
                let obj = match self.objects.get_mut(id as usize) {
                    // A live small object (see `Object`).
                    Some(o) if u64::from(o.request) <= small_max => std::mem::replace(o, DEAD),
                    _ => return self.free_other(id),
                };
                self.free_slab_region(obj.extent);
                self.frees += 1;
                self.stats.requested_bytes -= u64::from(obj.request);
                Ok(())
            }
            _ => self.apply_other(event),
        }
    }

    /// `sz_s2u` / `sz_sa2u`: the usable size jemalloc gives `size` bytes at `align`.
    #[inline]
    pub(crate) fn usable(&self, event: u64, size: u64, align: u64) -> Result<u64, SimError> {
        let too_large = || SimError::TooLarge { event, size };
        if align > 1 {
            if !align.is_power_of_two() {
                return Err(SimError::BadAlignment { event, align });
            }
            let small_max = self.small_max;
            let large_min = self.classes.large_minclass();
            if size <= small_max && align <= self.page {
                let u = self
                    .classes
                    .usable_size(size.max(1).div_ceil(align) * align)
                    .ok_or_else(too_large)?;
                if u < large_min {
                    return Ok(u);
                }
            }
            if align > self.page {
                return Err(SimError::UnmodelledAlignment { event, align });
            }
            if size <= large_min {
                return Ok(large_min);
            }
        }
        self.classes.usable_size(size).ok_or_else(too_large)
    }

    /// Allocates `usize` bytes: from a bin or as a large extent. Returns the slab or extent.
    #[inline]
    pub(crate) fn place(&mut self, event: u64, usize: u64) -> Result<u32, SimError> {
        if usize <= self.small_max {
            let bin = self.bin_index(usize);
            self.malloc_small(bin)
                .map_err(|_| SimError::OutOfAddressSpace { event })
        } else {
            let esize = usize + self.large_pad;
            let extent = self
                .pac
                .alloc(esize)
                .map_err(|_| SimError::OutOfAddressSpace { event })?;
            self.pac.ext.get_mut(extent).slab = false;
            self.stats.active_bytes += esize;
            self.stats.allocated_bytes += usize;
            self.note_mappings();
            Ok(extent)
        }
    }

    /// The bin of a small size (0 included, see `bin_of`).
    #[inline(always)]
    pub(crate) fn bin_index(&self, usize: u64) -> usize {
        assert!(usize <= self.small_max, "not a small size");
        // SAFETY: just checked.
        unsafe { self.small_bin_index(usize) }
    }

    /// `bin_index` without the check, for the allocation's fast path.
    ///
    /// # Safety
    /// `usize <= small_max`, so that `bin_of` has its entry (`small_max < 512 KiB` is
    /// checked when the model is made).
    #[inline(always)]
    unsafe fn small_bin_index(&self, usize: u64) -> usize {
        debug_assert!(usize <= self.small_max);
        let i = ((usize + 7) >> 3) as usize;
        // SAFETY: `usize < 512 KiB` (see above), so `i <= (512 KiB - 1 + 7) >> 3`, which is
        // `BIN_TABLE_LEN - 1`.
        unsafe { *self.bin_of.get_unchecked(i) as usize }
    }

    fn note_mappings(&mut self) {
        let n = self.pac.mappings.len() as u64;
        if n != self.stats.mappings {
            self.stats.mapped_bytes = self.pac.mapped_total;
            self.stats.mappings = n;
        }
    }

    /// `arena_malloc_small` without a thread cache: the current slab, else the heap's first
    /// (the lowest (serial number, address) non-full slab in 5.3.1; in 5.3.0 whatever its
    /// heap returns), else a fresh slab.
    // Always inlined: the fast path's result then stays in registers (no `Result` written
    // through memory and read back per event). No event number: callers name the event in
    // their error, so the fast path does not load the counter it has just stored.
    #[inline(always)]
    fn malloc_small(&mut self, b: usize) -> Result<u32, OutOfAddressSpace> {
        let bin = &self.bins[b];
        let (cur, size) = (bin.cur, bin.size);
        // `cur` is NIL (u32::MAX, past any record) or a live slab.
        let cur = match self.pac.ext.v.get_mut(cur as usize) {
            Some(e) if e.nfree > 0 => {
                e.nfree -= 1;
                cur
            }
            _ => {
                let slab = self.refill(b)?;
                self.pac.ext.get_mut(slab).nfree -= 1;
                slab
            }
        };
        self.bins[b].stats.curregs += 1;
        self.stats.allocated_bytes += size;
        Ok(cur)
    }

    /// The current slab is full or absent: the heap's minimum, else a fresh slab.
    #[cold]
    #[inline(never)]
    fn refill(&mut self, b: usize) -> Result<u32, OutOfAddressSpace> {
        let bin = &mut self.bins[b];
        bin.cur = bin.nonfull.remove_first(&mut self.pac.ext);
        if bin.cur != NIL {
            bin.stats.nonfull_slabs -= 1;
            return Ok(bin.cur);
        }
        let (slab_size, nregs) = (bin.slab_size, bin.nregs);
        let slab = self.pac.alloc(slab_size)?;
        let e = self.pac.ext.get_mut(slab);
        e.nfree = nregs;
        e.bin = b as u32;
        e.slab = true;
        self.bins[b].cur = slab;
        self.bins[b].stats.curslabs += 1;
        self.stats.slabs_created += 1;
        self.stats.active_bytes += slab_size;
        self.note_mappings();
        Ok(slab)
    }

    /// `bin_dalloc_locked_step` and what follows: an emptied slab goes back to the page
    /// allocator at once; a full slab that gains a free region becomes current if it sorts
    /// below the current one (`bin_lower_slab`).
    // Always inlined: the common free is a few instructions, not worth a call.
    #[inline(always)]
    fn free_small(&mut self, b: usize, slab: u32, nfree: u32) {
        let bin = &mut self.bins[b];
        bin.stats.curregs -= 1;
        self.stats.allocated_bytes -= bin.size;
        if nfree == bin.nregs || (nfree == 1 && slab != bin.cur) {
            self.slab_changes(b, slab, nfree);
        }
    }

    /// A slab became empty (released at once) or non-full (`bin_lower_slab`).
    #[cold]
    #[inline(never)]
    fn slab_changes(&mut self, b: usize, slab: u32, nfree: u32) {
        let bin = &mut self.bins[b];
        let ext = &mut self.pac.ext;
        let stats = &mut bin.stats;
        if nfree == bin.nregs {
            if slab == bin.cur {
                bin.cur = NIL;
            } else if bin.nregs > 1 {
                bin.nonfull.remove(ext, slab);
                stats.nonfull_slabs -= 1;
            }
            stats.curslabs -= 1;
            self.stats.slabs_released += 1;
            self.stats.active_bytes -= bin.slab_size;
            self.pac.dalloc(slab);
        } else {
            let cur = bin.cur;
            if cur != NIL && ext_key(ext, cur) > ext_key(ext, slab) {
                if ext.get(cur).nfree > 0 {
                    bin.nonfull.insert(ext, cur);
                    stats.nonfull_slabs += 1;
                }
                bin.cur = slab;
            } else {
                bin.nonfull.insert(ext, slab);
                stats.nonfull_slabs += 1;
            }
        }
    }

    /// Frees a region of its slab, or a large extent.
    // Always inlined: the common free is a few instructions, not worth a call.
    #[inline(always)]
    pub(crate) fn remove(&mut self, extent: u32) {
        let e = self.pac.ext.get_mut(extent);
        if e.slab {
            e.nfree += 1;
            // A bin index is below 254: through a `u8` it indexes the bins unchecked.
            let (b, nfree) = (e.bin as u8 as usize, e.nfree);
            self.free_small(b, extent, nfree);
        } else {
            let size = e.size;
            self.stats.active_bytes -= size;
            self.stats.allocated_bytes -= size - self.large_pad;
            self.pac.dalloc(extent);
        }
    }

    /// `remove` of a region of slab `slab`, taken from a live small object of this arena's
    /// table (see `Object`): no bounds check, no slab flag to test.
    #[inline(always)]
    fn free_slab_region(&mut self, slab: u32) {
        debug_assert!(self.pac.ext.get(slab).slab);
        // SAFETY: a live object's slab is a record in use (records are recycled, never
        // dropped), so `slab < ext.v.len()`.
        let e = unsafe { self.pac.ext.v.get_unchecked_mut(slab as usize) };
        e.nfree += 1;
        // A bin index is below 254: through a `u8` it indexes the bins unchecked.
        let (b, nfree) = (e.bin as u8 as usize, e.nfree);
        self.free_small(b, slab, nfree);
    }

    /// Purges every dirty extent to retained (the process model's thread exit).
    pub(crate) fn purge_all(&mut self) {
        self.pac.purge_all();
    }
}

fn ext_key(ext: &super::pac::Extents, id: u32) -> (u32, u64) {
    let e = ext.get(id);
    debug_assert_eq!(e.state, State::Active);
    (e.sn, e.offset)
}
