//! The arena: objects, bins and slabs on top of the page allocator (jemalloc's `bin.c`,
//! `arena.c`, `large.c`).

use super::decay::Decay;
use super::pac::{Pac, State};
use super::ph::{Heap, NIL};
use super::{ArenaStats, BinStats, SimError, Snapshot};
use crate::sizeclass::{AllocatorConfig, JemallocVersion, SizeClasses};
use crate::trace::Event;

mod build;
mod decay;
mod fill;
mod realloc;
mod view;
pub(crate) use fill::SlabPlace;
pub use view::ExtentView;

/// A bin's slabs: the current one and the non-full heap keyed by (serial number, address).
#[derive(Clone, Copy)]
struct Bin {
    cur: u32,
    nonfull: Heap,
    size: u64,
    nregs: u32,
    slab_size: u64,
}

/// Where a live object is: 8 bytes, as the object table is the model's main memory. A
/// request of 4 GiB or more and an alignment live in side tables (rare).
#[derive(Clone, Copy, Debug)]
struct Object {
    /// The slab (small) or extent (large) holding it; `NIL` when the id is not live. Which
    /// of the two, and the bin, are on the extent record.
    extent: u32,
    /// The requested size; `u32::MAX` means "see `big_requests`".
    request: u32,
}

const DEAD: Object = Object {
    extent: NIL,
    request: 0,
};

/// Bin index by `(size - 1) >> 3`, truncated to 16 bits (see `ArenaModel::bin_of`).
type BinTable = [u8; 1 << 16];

/// One jemalloc arena, modelled. See the module documentation of [`crate::sim`].
pub struct ArenaModel {
    classes: SizeClasses,
    pac: Pac,
    /// One slot per possible bin index (a `u8`), so that indexing by a bin index needs no
    /// bounds check on the fast path; the first `nbins` are the build's bins. In line, not
    /// boxed: the fast path reaches them without loading a pointer (16 KiB per model).
    bins: [Bin; 256],
    bin_stats: [BinStats; 256],
    nbins: usize,
    objects: Vec<Object>,
    stats: ArenaStats,
    page: u64,
    large_pad: u64,
    /// Bin index by `(size - 1) >> 3` for small sizes (jemalloc's `sz_size2index_tab`);
    /// every class is a multiple of 8, so a request and its usable size index alike. Indexed
    /// by that value truncated to 16 bits (no bounds check; small sizes are below 512 KiB)
    /// and its last entry is bin 0, so that size 0 (`(0 - 1) >> 3` truncated) needs no
    /// branch either.
    /// Shared by every model of the build (see `build.rs`).
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

    pub fn stats(&self) -> &ArenaStats {
        &self.stats
    }

    pub fn bins(&self) -> &[BinStats] {
        &self.bin_stats[..self.nbins]
    }

    pub fn classes(&self) -> &SizeClasses {
        &self.classes
    }

    /// The statistics the live replay compares, at the current event.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            event: self.stats.events,
            allocated_bytes: self.stats.allocated_bytes,
            active_bytes: self.stats.active_bytes,
            bins: self.bins().to_vec(),
        }
    }

    /// Applies one event. On error the arena is unchanged except for the event count.
    ///
    /// The common events (a small unaligned allocation, a free) take a short path that
    /// touches the object table, one bin and one slab; everything else goes through
    /// `apply_other`. Always inlined into the caller's loop: the common events then cost no
    /// call, and their `Result` is a flag in a register rather than a record in memory.
    #[inline(always)]
    pub fn apply(&mut self, event: Event) -> Result<(), SimError> {
        self.stats.events += 1;
        match event {
            Event::Alloc { id, size, align } if align <= 1 && size <= self.small_max => {
                let i = id as usize;
                if i >= self.objects.len() {
                    self.grow_objects(i);
                }
                // SAFETY: `i < objects.len()`, just ensured; the table never shrinks.
                if unsafe { self.objects.get_unchecked(i) }.extent != NIL {
                    return Err(SimError::AllocOfLiveId {
                        event: self.stats.events,
                        id,
                    });
                }
                let b = self.bin_index(size);
                let slab = self.malloc_small(self.stats.events, b)?;
                // `size <= small_max` fits in the short request field.
                // SAFETY: as above (`malloc_small` does not touch the table).
                *unsafe { self.objects.get_unchecked_mut(i) } = Object {
                    extent: slab,
                    request: size as u32,
                };
                self.stats.live_objects += 1;
                self.stats.requested_bytes += size;
                Ok(())
            }
            Event::Free { id } => {
                let obj = match self.objects.get_mut(id as usize) {
                    Some(o) if o.extent != NIL => std::mem::replace(o, DEAD),
                    _ => {
                        return Err(SimError::FreeOfDeadId {
                            event: self.stats.events,
                            id,
                        })
                    }
                };
                // Aligned objects and requests of 4 GiB or more carry the sentinel.
                let request = if obj.request == u32::MAX {
                    self.forget_side_tables(id, obj)
                } else {
                    u64::from(obj.request)
                };
                self.remove_from::<false>(obj.extent);
                self.stats.live_objects -= 1;
                self.stats.requested_bytes -= request;
                Ok(())
            }
            _ => self.apply_other(event),
        }
    }

    /// Large or aligned allocations and reallocs.
    #[inline(never)]
    fn apply_other(&mut self, event: Event) -> Result<(), SimError> {
        let n = self.stats.events;
        match event {
            Event::Alloc { id, size, align } => {
                if self.live(id).is_some() {
                    return Err(SimError::AllocOfLiveId { event: n, id });
                }
                let usize = self.usable(n, size, align)?;
                let extent = self.place(n, usize)?;
                if align > 1 {
                    self.aligns.insert(id, align);
                }
                self.set(id, extent, size);
                self.stats.live_objects += 1;
                self.stats.requested_bytes += size;
            }
            Event::Free { .. } => unreachable!("frees take the short path"),
            Event::Realloc { id, size } => {
                let obj = self
                    .live(id)
                    .ok_or(SimError::ReallocOfUnknownId { event: n, id })?;
                let align = self.aligns.get(&id).copied().unwrap_or(0);
                let usize = self.usable(n, size, align)?;
                let request = self.request_of(id, obj);
                let extent = self.realloc(n, obj.extent, usize)?;
                self.set(id, extent, size);
                self.stats.requested_bytes = self.stats.requested_bytes - request + size;
            }
        }
        Ok(())
    }

    /// A freed object's request (from the side table: it is 4 GiB or more, or the object is
    /// aligned); its alignment, if any, is forgotten.
    #[cold]
    #[inline(never)]
    fn forget_side_tables(&mut self, id: u32, obj: Object) -> u64 {
        self.aligns.remove(&id);
        let request = self.request_of(id, obj);
        self.big_requests.remove(&id);
        request
    }

    /// Makes room for id `i` in the object table (doubling, so a trace of growing ids costs
    /// amortised O(1)).
    #[cold]
    #[inline(never)]
    fn grow_objects(&mut self, i: usize) {
        let len = (i + 1).max(self.objects.len() * 2).max(1024);
        self.objects.resize(len, DEAD);
    }

    #[inline]
    fn live(&self, id: u32) -> Option<Object> {
        self.objects
            .get(id as usize)
            .copied()
            .filter(|o| o.extent != NIL)
    }

    /// A live object's request. Read only: a realloc that fails afterwards must leave the
    /// side table as it was ([`ArenaModel::set`] and a free update it).
    fn request_of(&self, id: u32, obj: Object) -> u64 {
        if obj.request == u32::MAX {
            self.big_requests
                .get(&id)
                .copied()
                .unwrap_or(u64::from(u32::MAX))
        } else {
            u64::from(obj.request)
        }
    }

    /// Records a live object. Its request goes to the side table when it does not fit the
    /// short field, and when the object is aligned: the sentinel then tells a free to forget
    /// the alignment too, so that a free checks one value.
    fn set(&mut self, id: u32, extent: u32, request: u64) {
        let i = id as usize;
        if i >= self.objects.len() {
            self.grow_objects(i);
        }
        let short = if request >= u64::from(u32::MAX)
            || (!self.aligns.is_empty() && self.aligns.contains_key(&id))
        {
            self.big_requests.insert(id, request);
            u32::MAX
        } else {
            if !self.big_requests.is_empty() {
                // A realloc from a side-table request to a short one.
                self.big_requests.remove(&id);
            }
            request as u32
        };
        self.objects[i] = Object {
            extent,
            request: short,
        };
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
            self.malloc_small(event, bin)
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
        self.bin_of[(usize.wrapping_sub(1) >> 3) as u16 as usize] as usize
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
    // through memory and read back per event).
    #[inline(always)]
    fn malloc_small(&mut self, event: u64, b: usize) -> Result<u32, SimError> {
        let bin = &self.bins[b];
        let (cur, size) = (bin.cur, bin.size);
        // `cur` is NIL (u32::MAX, past any record) or a live slab.
        let cur = match self.pac.ext.v.get_mut(cur as usize) {
            Some(e) if e.nfree > 0 => {
                e.nfree -= 1;
                cur
            }
            _ => {
                let slab = self.refill(event, b)?;
                self.pac.ext.get_mut(slab).nfree -= 1;
                slab
            }
        };
        self.bin_stats[b].curregs += 1;
        self.stats.allocated_bytes += size;
        Ok(cur)
    }

    /// The current slab is full or absent: the heap's minimum, else a fresh slab.
    #[cold]
    #[inline(never)]
    fn refill(&mut self, event: u64, b: usize) -> Result<u32, SimError> {
        let bin = &mut self.bins[b];
        bin.cur = bin.nonfull.remove_first(&mut self.pac.ext);
        if bin.cur != NIL {
            self.bin_stats[b].nonfull_slabs -= 1;
            return Ok(bin.cur);
        }
        let (slab_size, nregs) = (bin.slab_size, bin.nregs);
        let slab = self
            .pac
            .alloc(slab_size)
            .map_err(|_| SimError::OutOfAddressSpace { event })?;
        let e = self.pac.ext.get_mut(slab);
        e.nfree = nregs;
        e.bin = b as u32;
        e.slab = true;
        self.bins[b].cur = slab;
        self.bin_stats[b].curslabs += 1;
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
        self.bin_stats[b].curregs -= 1;
        let bin = &self.bins[b];
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
        let stats = &mut self.bin_stats[b];
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

    // Always inlined: the common free is a few instructions, not worth a call.
    #[inline(always)]
    pub(crate) fn remove(&mut self, extent: u32) {
        self.remove_from::<true>(extent)
    }

    /// `remove`; `CHECKED` false skips the bounds check, for the free of an object from
    /// this arena's own table (see `apply`).
    #[inline(always)]
    fn remove_from<const CHECKED: bool>(&mut self, extent: u32) {
        let e = if CHECKED {
            self.pac.ext.get_mut(extent)
        } else {
            debug_assert!((extent as usize) < self.pac.ext.v.len());
            // SAFETY: the caller took `extent` from a live object of the table: a slab or
            // extent record that is in use (records are recycled, never dropped).
            unsafe { self.pac.ext.v.get_unchecked_mut(extent as usize) }
        };
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
