//! One base allocator as jemalloc's `base.c` runs it: blocks mapped in a growing series,
//! carved by `base_alloc_impl` from free tails filed by size class, and the statistics it
//! keeps (`stats.arenas.<i>.base`, its share of `resident` and `mapped`).
//!
//! - `base_block_alloc`: a block holds a 144-byte header (`base_block_t`, its own extent
//!   record embedded) then the request; its size is the larger of the request's
//!   (`sz_psz2u(header + gap + usize)`) and the next page-size class after the last block's
//!   (`pind_last + 1`), both rounded up to 2 MiB (`HUGEPAGE_CEILING`, or 5.3.1's
//!   `BASE_BLOCK_MIN_ALIGN` with `metadata_thp` disabled: the same on x86-64), so the series
//!   is 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, ... MiB.
//! - `base_alloc_impl`: `asize = usize + align - QUANTUM`; the first non-empty class from
//!   `sz_size2index(asize)` up gives the tail, a tail being filed under the *floor* class of
//!   its length (`base_edata_heap_insert`); within a class the oldest block (lowest serial
//!   number, `edata_snad_comp`). No tail: a new block. The alignment gap is lost.
//! - Statistics (`base_extent_bump_alloc_post`, `base_extent_alloc`): `allocated` += the
//!   carved size (a block: its header), `resident` += the pages from the gap's start to the
//!   carved end not yet counted (so a block's resident is the page ceiling of its bump
//!   pointer), `mapped` += a block's size. `metadata_thp` is off by default: no huge pages.

use crate::sizeclass::{PageSizeClasses, SizeClasses};

/// `HUGEPAGE`: blocks are a whole number of 2 MiB.
const HUGEPAGE: u64 = 2 << 20;
const QUANTUM: u64 = 16;
pub(super) const CACHELINE: u64 = 64;
/// `EDATA_ALIGNMENT`: `base_alloc_edata` carves records at this alignment.
const EDATA_ALIGNMENT: u64 = 128;

/// `sizeof(edata_t)` on a build with `page`-byte pages: 64 bytes of fields (bits, address,
/// size, `e_ps`, serial number, a pairing-heap link) then a union whose largest member is a
/// slab's free-region bitmap (`slab_data_t`), `BITMAP_GROUPS_MAX` 64-bit groups for
/// `SC_SLAB_MAXREGS = page / 8` bits: one level up to 512 bits (4 KiB pages: 8 groups, 128
/// bytes in all), a tree of levels above (`BITMAP_USE_TREE`; 64 KiB pages: 128 + 2 + 1
/// groups, 1,112 bytes). Measured on 64 KiB pages: each new record adds 1,152 bytes.
pub(crate) fn edata_size(page: u64) -> u64 {
    let bits = (page / 8).max(64);
    let mut groups = bits.div_ceil(64);
    if bits > 512 {
        let mut level = groups;
        while level > 1 {
            level = level.div_ceil(64);
            groups += level;
        }
    }
    64 + 8 * groups
}

/// An extent record as the base carves it (`base_alloc_edata`): `edata_size` at
/// `EDATA_ALIGNMENT` (128 bytes with 4 KiB pages, 1,152 with 64 KiB).
pub fn edata_bytes(page: u64) -> u64 {
    edata_size(page).div_ceil(EDATA_ALIGNMENT) * EDATA_ALIGNMENT
}

/// `sizeof(base_block_t)`: the block's size and next pointer and its embedded `edata_t`
/// (144 bytes with 4 KiB pages).
pub fn header_bytes(page: u64) -> u64 {
    16 + edata_size(page)
}

/// The build's size classes as the base files tails and sizes blocks by.
#[derive(Clone, Debug)]
pub(super) struct BaseClasses {
    /// Every size class, ascending (`sz_index2size`).
    sizes: Vec<u64>,
    psz: PageSizeClasses,
    page: u64,
    /// [`header_bytes`] and [`edata_bytes`] of the build's page.
    header: u64,
    edata: u64,
}

impl BaseClasses {
    pub fn new(classes: &SizeClasses) -> BaseClasses {
        let page = classes.config().page();
        BaseClasses {
            sizes: classes.all().iter().map(|c| c.size).collect(),
            psz: PageSizeClasses::new(classes),
            page,
            header: header_bytes(page),
            edata: edata_bytes(page),
        }
    }

    /// `sz_size2index(size)`: the smallest class of at least `size` bytes.
    fn ceil_index(&self, size: u64) -> usize {
        self.sizes.partition_point(|&c| c < size)
    }

    /// `sz_size2index(size + 1) - 1`: the largest class of at most `size` bytes (`size` is at
    /// least the quantum: every length here is a multiple of it).
    fn floor_index(&self, size: u64) -> usize {
        self.sizes.partition_point(|&c| c <= size).saturating_sub(1)
    }

    fn page_ceil(&self, x: u64) -> u64 {
        x.div_ceil(self.page) * self.page
    }
}

/// A block's free tail: `[at, at + len)`, the block made `sn`-th.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tail {
    sn: u64,
    at: u64,
    len: u64,
}

/// One base allocator and its statistics.
#[derive(Clone, Debug, Default)]
pub(super) struct Base {
    tails: Vec<Tail>,
    blocks: u64,
    pind_last: usize,
    pub allocated: u64,
    pub resident: u64,
    pub mapped: u64,
    /// Extent records allocated so far (the arena's high-water mark, `edata_cache`).
    pub records: u64,
}

impl Base {
    /// `base_new`: the first block, then `sizeof(base_t)` and the rest of what a fresh arena
    /// carves (`arena_t` and its bins) as one piece of `allocated - HEADER` bytes at cache-line
    /// alignment (both are cache-line multiples: the 48-byte gap after the header is the only
    /// one).
    pub fn fresh(allocated: u64, c: &BaseClasses) -> Base {
        let mut b = Base::default();
        let rest = allocated.saturating_sub(c.header);
        b.alloc(rest / CACHELINE * CACHELINE, CACHELINE, c);
        // What start-up carved beyond cache lines (arena 0's tables), so that `allocated` is
        // as measured.
        if !rest.is_multiple_of(CACHELINE) {
            b.alloc(rest % CACHELINE, QUANTUM, c);
        }
        b
    }

    /// Arena 0's base (`b0`) as start-up left it: `allocated` bytes of which the radix tree's
    /// `tree` nodes and leaves (in the order made). Start-up carves its tables before the
    /// first leaf, and everything after it goes to the first block's smaller tail, so the
    /// first block holds all but the tree: carved first, then the tree.
    pub(crate) fn startup(allocated: u64, tree: &[u64], c: &BaseClasses) -> Base {
        let tree_bytes: u64 = tree.iter().sum();
        let mut blocks = 1;
        loop {
            let rest = allocated.saturating_sub(tree_bytes + blocks * c.header);
            let mut b = Base::fresh(rest + c.header, c);
            for &t in tree {
                b.alloc(t, CACHELINE, c);
            }
            if b.blocks <= blocks {
                return b;
            }
            blocks = b.blocks;
        }
    }

    /// `base_alloc(size, align)`.
    pub fn alloc(&mut self, size: u64, align: u64, c: &BaseClasses) {
        let align = align.div_ceil(QUANTUM).max(1) * QUANTUM;
        let usize = size.div_ceil(align) * align;
        let asize = usize + align - QUANTUM;
        let want = c.ceil_index(asize);
        let k = match self.tail_for(want, c) {
            Some(k) => k,
            None => self.new_block(usize, align, c),
        };
        let t = &mut self.tails[k];
        let gap = t.at.div_ceil(align) * align - t.at;
        let ret = t.at + gap;
        t.at = ret + usize;
        t.len -= gap + usize;
        if t.len == 0 {
            self.tails.swap_remove(k);
        }
        self.allocated += usize;
        self.resident += c.page_ceil(ret + usize) - c.page_ceil(ret - gap);
    }

    /// `base_block_alloc` for `usize` bytes at `align`: returns the new tail's index.
    /// The tail `base_alloc_impl` takes for a request of ceiling class `want`: the lowest
    /// class from `want` up (a tail filed under the floor class of its length), then the
    /// heap's order, serial number and address.
    fn tail_for(&self, want: usize, c: &BaseClasses) -> Option<usize> {
        self.tails
            .iter()
            .enumerate()
            .map(|(k, t)| (c.floor_index(t.len), t.sn, t.at, k))
            .filter(|&(class, ..)| class >= want)
            .min()
            .map(|(.., k)| k)
    }

    fn new_block(&mut self, usize: u64, align: u64, c: &BaseClasses) -> usize {
        let header = c.header;
        let gap = header.div_ceil(align) * align - header;
        let round = |x: u64| x.div_ceil(HUGEPAGE) * HUGEPAGE;
        let min = round(c.psz.pind2sz(c.psz.psz2ind(header + gap + usize)));
        let last = c.psz.psz2ind(c.psz.pind2sz(c.psz.npsizes() - 1));
        let next = match self.pind_last + 1 < last {
            true => self.pind_last + 1,
            false => self.pind_last,
        };
        let size = min.max(round(c.psz.pind2sz(next)));
        self.pind_last = c.psz.psz2ind(size);
        // Blocks are HUGEPAGE aligned: placed far apart, each at its serial number.
        let start = (self.blocks + 1) << 40;
        self.tails.push(Tail {
            sn: self.blocks,
            at: start + header,
            len: size - header,
        });
        self.blocks += 1;
        self.allocated += header;
        self.resident += c.page_ceil(header);
        self.mapped += size;
        self.tails.len() - 1
    }

    /// Moves the free tail records are carved from first so that `capacity` records fit in
    /// the tails before a new block, as measured (start-up's alignment gaps are not in the
    /// statistics: the rebuilt first block can be a record or two off). A difference of more
    /// than a few records means the rebuild is off otherwise: left as it is.
    pub(crate) fn fit_records(&mut self, capacity: u64, c: &BaseClasses) {
        let mut probe = self.clone();
        let blocks = probe.blocks;
        let mut fits = 0u64;
        while probe.blocks == blocks && fits <= capacity + 64 {
            probe.alloc(c.edata, EDATA_ALIGNMENT, c);
            fits += 1;
        }
        let fits = fits.saturating_sub(1);
        let want = c.ceil_index(c.edata + EDATA_ALIGNMENT - QUANTUM);
        let Some(k) = self.tail_for(want, c) else {
            return;
        };
        let t = &mut self.tails[k];
        let shift = (fits.abs_diff(capacity)) * c.edata;
        if fits == capacity || fits.abs_diff(capacity) > 16 || shift >= t.len {
            return;
        }
        match fits > capacity {
            true => (t.at, t.len) = (t.at + shift, t.len - shift),
            false => (t.at, t.len) = (t.at - shift, t.len + shift),
        }
    }

    /// `base_alloc_edata`, once per record past the high-water mark.
    pub(crate) fn records_to(&mut self, records: u64, c: &BaseClasses) {
        while self.records < records {
            self.alloc(c.edata, EDATA_ALIGNMENT, c);
            self.records += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizeclass::AllocatorConfig;

    fn classes() -> BaseClasses {
        let config = AllocatorConfig::new(4, 12, 2).unwrap();
        BaseClasses::new(&SizeClasses::new(config).unwrap())
    }

    /// A fresh arena as measured on the linked 5.3.1 (`stats.arenas.<i>.base` 92,880,
    /// resident 94,208 = 23 pages, mapped 2 MiB, `jemalloc-internals-2.md` 1.4): the bump
    /// pointer at 92,928 (the 48-byte gap after the header), 128-byte aligned, so ten
    /// records fit under 94,208 and the eleventh touches a new page (hand derived).
    /// `sizeof(edata_t)` by page: 128 with 4 KiB pages (the header 144, both measured by
    /// the live tests), 64 KiB pages 1,112 carved as 1,152 (measured: each new slab's record
    /// raised `stats.metadata` by 1,152 on `JEMALLOC_SYS_WITH_LG_PAGE=16`); 16 KiB pages
    /// hand-derived from `bitmap.h` (2,048 bits: 32 + 1 groups).
    #[test]
    fn extent_records_grow_with_the_slab_bitmap() {
        assert_eq!(
            (edata_size(4096), edata_bytes(4096), header_bytes(4096)),
            (128, 128, 144)
        );
        assert_eq!((edata_size(65536), edata_bytes(65536)), (1112, 1152));
        assert_eq!(header_bytes(65536), 1128);
        assert_eq!((edata_size(16384), edata_bytes(16384)), (64 + 33 * 8, 384));
    }

    #[test]
    fn a_fresh_arena_then_records_fill_its_last_page() {
        let c = classes();
        let mut b = Base::fresh(92_880, &c);
        assert_eq!(
            (b.allocated, b.resident, b.mapped),
            (92_880, 94_208, 2 << 20)
        );
        b.records_to(10, &c);
        assert_eq!((b.allocated, b.resident), (92_880 + 1280, 94_208));
        b.records_to(11, &c);
        assert_eq!((b.allocated, b.resident), (92_880 + 1408, 98_304));
    }

    /// Records fill the 2 MiB block while its tail is at least 256 bytes (an `edata_t`'s
    /// asize 240 asks for class 256; a tail is filed under its floor class), then a 4 MiB
    /// block (the series' next: 2.5 MiB rounded up) takes the next one, its header page
    /// and the record's page. From 92,928 to 2 MiB is 2,004,224 bytes, 15,658 records, but
    /// the last 128 bytes are never used: 15,657 records (hand derived).
    #[test]
    fn a_full_block_moves_on_to_a_larger_one() {
        let c = classes();
        let mut b = Base::fresh(92_880, &c);
        b.records_to(15_657, &c);
        assert_eq!((b.mapped, b.resident), (2 << 20, 2 << 20));
        assert_eq!(
            b.tails,
            vec![Tail {
                sn: 0,
                at: (1 << 40) + (2 << 20) - 128,
                len: 128
            }]
        );
        b.records_to(15_658, &c);
        assert_eq!(b.mapped, 6 << 20);
        assert_eq!(b.allocated, 92_880 + 15_658 * 128 + header_bytes(4096));
        // The header page, then the record at 256 (128-aligned after 144) in the same page.
        assert_eq!(b.resident, (2 << 20) + 4096);
        // The next records stay in the new block: a page per 32 records.
        b.records_to(15_658 + 31, &c);
        assert_eq!(b.resident, (2 << 20) + 8192);
        assert_eq!(b.mapped, 6 << 20);
    }

    /// The measured capacity moves the first tail: two records fewer than the rebuild
    /// gives, then two more.
    #[test]
    fn fit_records_moves_the_first_tail() {
        let c = classes();
        for capacity in [15_655, 15_659] {
            let mut b = Base::fresh(92_880, &c);
            b.fit_records(capacity, &c);
            b.records_to(capacity, &c);
            assert_eq!(b.mapped, 2 << 20, "{capacity}");
            b.records_to(capacity + 1, &c);
            assert_eq!(b.mapped, 6 << 20, "{capacity}");
        }
    }

    /// Block sizes follow the page-size class series rounded to 2 MiB: 2, 4, 6, 8, 10, 12,
    /// 14, 16, 20, 24 MiB (`jemalloc-internals-2.md` 1.2).
    #[test]
    fn blocks_grow_in_the_series() {
        let c = classes();
        let mut b = Base::default();
        let mut sizes = Vec::new();
        for _ in 0..10 {
            let before = b.mapped;
            b.new_block(16, 16, &c);
            sizes.push((b.mapped - before) >> 20);
        }
        assert_eq!(sizes, vec![2, 4, 6, 8, 10, 12, 14, 16, 20, 24]);
    }

    /// A 2 MiB radix-tree leaf (asize 2 MiB + 48: class 2.5 MiB) fits no 2 MiB block's
    /// tail: a new block. Debian's 5.3.0 at start-up, measured (`stats.arenas.0.base`
    /// 2,639,856 with one leaf, base mapped 6 MiB, base resident 2,646,016: resident less
    /// active, no dirty pages): the first block holds the rest, the second the leaf.
    #[test]
    fn startup_with_one_leaf_as_measured() {
        let c = classes();
        let b = Base::startup(2_639_856, &[2 << 20], &c);
        assert_eq!(
            (b.allocated, b.mapped, b.resident),
            (2_639_856, 6 << 20, 2_646_016)
        );
        // The second block's tail (floor class 1.75 MiB) is larger than the first's: records
        // go to the first.
        let mut b2 = b.clone();
        b2.records_to(1, &c);
        assert_eq!(b2.resident, b.resident, "the first block's current page");
    }
}
