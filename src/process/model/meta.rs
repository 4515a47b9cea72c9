//! jemalloc's metadata resident over the trace (`stats.arenas.<i>.base` resident): each
//! arena's base allocator (`base.c`) bump-allocating extent records, and arena 0's base
//! (jemalloc's `b0`) also the radix tree's leaves (`rtree.c`) as extents appear at new
//! addresses.
//!
//! - Each arena's base is modelled block by block (`model/base.rs`): a fresh arena's starts
//!   from what was measured (`stats.arenas.<i>.base` of a new arena), arena 0's from its
//!   measured bytes before the first event, rebuilt as start-up's tables in the first block
//!   and the radix tree's pieces after them (`Base::startup`).
//! - An extent record (`edata_t`, 128 bytes at 128-byte alignment, `base_alloc_edata`) is
//!   allocated when an arena holds more records than ever before (jemalloc's `edata_cache`
//!   reuses freed ones).
//! - The radix tree: on a build with 57 significant address bits (this machine's), three
//!   levels of 15 bits: a leaf of 2^15 16-byte elements (512 KiB) covers 128 MiB of address
//!   space, a middle node (256 KiB) 4 TiB; with 48 bits, two levels of 18 bits, 2 MiB leaves
//!   covering 1 GiB (the root is static). `rtree_leaf_elm_lookup_hard` makes a leaf when an
//!   extent's first or last page (`emap_register_boundary`) falls in a region without one.
//!   Addresses are modelled: Linux maps top-down, so each new mapping of the trace (an
//!   arena's base block, 2 MiB aligned; an arena's growth of its address space, `mapped +
//!   retained`; a base's later blocks) goes just below the previous one, starting below the
//!   replayer's worker stacks; at a 2 MiB boundary where jemalloc aligns it (base blocks) or
//!   the kernel does (Linux 6.7 on, as probed: `metadata::MapAlign`), leaving a hole above.
//!   Left out: the replayer's own mappings during the trace, smaller mappings filling holes.
//!   Where the kernel aligns, a growth longer than a leaf's span also gets a leaf for each
//!   region inside it when an extent is first split there (the pac model logs its splits),
//!   as jemalloc registers every split's boundary pages.
//!
//! A recorded trace says where the program's allocator put its memory (its mappings,
//! `Record::Mapping`, before the call that made each): start-up's leaves go at the first one,
//! and each arena growth takes the recorded mapping of its length, so the leaves are the real
//! ones whatever ASLR drew (`MetaState::recorded_mapping`).
//!
//! Otherwise where the addresses start is ASLR's draw: the live comparison passes each run's (the
//! lowest worker stack; a heap table's address and the bounds of the mapping that holds it,
//! from `/proc/self/maps`, for the leaves start-up registered); without them the model draws
//! a position within a leaf from the seed. Start-up's leaves are where its extents are: the
//! mapping holding the table is start-up's arena-0 memory (its grow mappings, adjacent
//! top-down, merge into one mapping, 28 MiB in the live replayer), and when the tree has
//! more leaves than the table's, the others are that mapping's (measured: of 10 python-threads
//! runs with two leaves at start, the mapping crossed a 128 MiB boundary below the table in
//! every one; taking the second leaf above it instead, as before, gave a third leaf the real
//! runs never make once the trace's mappings went down into the one below).

use super::base::{Base, BaseClasses, CACHELINE};
use super::Metadata;
use crate::sim::decay::mix_seed;
use crate::sim::ArenaModel;
use std::collections::BTreeSet;

const BLOCK: u64 = 2 << 20;

/// The bases' statistics summed: `stats.arenas.<i>.base` (allocated), and their share of
/// `resident` and `mapped`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct BaseTotals {
    pub allocated: u64,
    pub resident: u64,
    pub mapped: u64,
}

/// The radix tree's shape (from its size before the first event).
#[derive(Clone, Copy, Debug)]
struct Geometry {
    leaf_bytes: u64,
    /// log2 of the address span one leaf covers.
    lg_leaf_span: u32,
    /// 0: no middle level.
    node_bytes: u64,
    lg_node_span: u32,
}

impl Geometry {
    fn of(rtree: u64, page: u64) -> Option<Geometry> {
        let lg_page = page.trailing_zeros();
        let (leaf57, node57) = (16u64 << 15, 8u64 << 15);
        if rtree >= node57 + leaf57 && rtree % leaf57 == node57 {
            Some(Geometry {
                leaf_bytes: leaf57,
                lg_leaf_span: lg_page + 15,
                node_bytes: node57,
                lg_node_span: lg_page + 30,
            })
        } else if rtree > 0 && rtree.is_multiple_of(8 << 18) {
            Some(Geometry {
                leaf_bytes: 8 << 18,
                lg_leaf_span: lg_page + 18,
                node_bytes: 0,
                lg_node_span: 64,
            })
        } else {
            None
        }
    }
}

/// The radix tree start-up makes on a jemalloc built for `bits` virtual address bits with
/// 4 KiB pages: `rtree.h` splits the `bits - 12` significant bits over 1 to 3 levels (2 when
/// at most 36, 3 when at most 52: `NSB/3, NSB/3 + NSB%3/2, the rest`), the root static; a
/// leaf element is 8 bytes on builds of at most 48 bits (`RTREE_LEAF_COMPACT`), else 16, a
/// node element 8. Start-up makes one leaf, and on three levels one middle node: 57 bits,
/// 256 KiB + 512 KiB; 48 bits, one 2 MiB leaf (the shapes [`Geometry::of`] knows).
pub(super) fn startup_rtree_bytes(bits: u32) -> u64 {
    let nsb = bits.saturating_sub(12);
    let elm: u64 = if bits <= 48 { 8 } else { 16 };
    match nsb {
        0..=10 => 0,
        11..=36 => elm << (nsb / 2 + nsb % 2),
        _ => (8u64 << (nsb / 3 + nsb % 3 / 2)) + (elm << (nsb / 3 + nsb % 3 - nsb % 3 / 2)),
    }
}

/// The modelled address space: where the next mapping goes and the radix tree's leaves.
#[derive(Clone, Debug)]
struct Space {
    geometry: Geometry,
    cursor: u64,
    leaves: BTreeSet<u64>,
    nodes: BTreeSet<u64>,
    /// Each arena's `mapped + retained` bytes so far.
    vsize: Vec<u64>,
    /// The recorded program's allocator mappings not yet matched to a modelled one, oldest
    /// first (a recording's [`crate::trace::Record::Mapping`]s).
    recorded: std::collections::VecDeque<(u64, u64)>,
    /// Start-up's leaves were placed at a recorded mapping.
    startup_recorded: bool,
    /// Where the kernel puts a mapping below the cursor.
    align: super::MapAlign,
    /// Each arena's mappings by serial number: where each starts (`None`: made before the
    /// model started); kept where the kernel aligns (see `Space::split_leaves`).
    starts: Vec<Vec<Option<u64>>>,
    /// The last growth `map` placed (low, high), not yet given to `note_mappings`.
    placed: Option<(u64, u64)>,
}

/// Recorded mappings kept unmatched at most (a program whose allocator maps what the model
/// never does, glibc's malloc say, must not grow the queue without end).
const RECORDED_MAX: usize = 64;

/// The metadata model's state (see the module documentation).
#[derive(Clone, Debug, Default)]
pub(super) struct MetaState {
    on: bool,
    classes: Option<BaseClasses>,
    m: Metadata,
    bases: Vec<Option<Base>>,
    space: Option<Space>,
}

fn vsize(a: &ArenaModel) -> u64 {
    let p = a.page_sets();
    a.stats().active_bytes + p.dirty_bytes + p.muzzy_bytes + p.retained_bytes
}

impl MetaState {
    /// Starts from `m` with the arenas as they are now (arena 0's state is what `m` measured).
    /// `made`: arenas that exist without an arena model (made for internal bindings only).
    pub fn start(
        m: Metadata,
        arenas: &[Option<ArenaModel>],
        made: &[bool],
        page: u64,
        seed: u64,
    ) -> MetaState {
        let on = m.base_allocated > 0 || m.per_arena_allocated > 0;
        let classes = arenas[0].as_ref().map(|a| BaseClasses::new(a.classes()));
        let (Some(c), true) = (classes, on) else {
            return MetaState::default();
        };
        let geometry = Geometry::of(m.rtree_bytes, page);
        let mut bases = vec![None; arenas.len()];
        for (i, a) in arenas.iter().enumerate() {
            bases[i] = match a {
                Some(a) if i == 0 => {
                    let mut b = Base::startup(m.base_allocated, &startup_tree(geometry, &m), &c);
                    if let Some(capacity) = m.base_records {
                        b.fit_records(capacity, &c);
                    }
                    b.records = a.extent_records();
                    Some(b)
                }
                None if !made[i] => None,
                _ => Some(Base::fresh(m.per_arena_allocated, &c)),
            };
        }
        let space = geometry.map(|g| {
            let span = 1u64 << g.lg_leaf_span;
            // Without measured addresses: a mapping cursor at a seeded place in a leaf (page
            // aligned), far from address 0.
            let seeded = (1u64 << 46) + (mix_seed(seed, 11, 0) % span) / page * page;
            let heap = if m.heap == 0 { seeded } else { m.heap };
            let mut cursor = if m.below == 0 { heap } else { m.below };
            // Where the kernel aligns nothing (before Linux 6.7) the model keeps its older
            // placement (an idle-arena block always below, base blocks not moving the
            // cursor): it matched live runs there, and no such kernel is at hand to test a
            // change against.
            let aligning = m.map_align.any();
            if m.below != 0 && (m.idle_below || !aligning) {
                // The live replayer's idle arena, made after its workers: its base block.
                cursor = (cursor - BLOCK) / BLOCK * BLOCK;
            }
            // Start-up's leaves: the heap's, and its mapping's (see `startup_leaves`).
            Space {
                geometry: g,
                cursor,
                leaves: startup_leaves(g, heap, m.heap_mapping, startup_leaf_count(g, &m)),
                nodes: (g.node_bytes > 0)
                    .then_some(heap >> g.lg_node_span)
                    .into_iter()
                    .collect(),
                vsize: arenas.iter().map(|a| a.as_ref().map_or(0, vsize)).collect(),
                recorded: Default::default(),
                startup_recorded: false,
                align: m.map_align,
                starts: arenas
                    .iter()
                    .map(|a| {
                        a.as_ref()
                            .map_or(vec![], |a| vec![None; a.mapping_sizes().len()])
                    })
                    .collect(),
                placed: None,
            }
        });
        MetaState {
            on: true,
            classes: Some(c),
            m,
            bases,
            space,
        }
    }

    /// Whether the bases are modelled (a measured start was given).
    pub(crate) fn is_on(&self) -> bool {
        self.on
    }

    /// Arena `i`'s base mapped bytes (0 where it has no base or the model is off).
    pub(crate) fn base_mapped(&self, i: usize) -> u64 {
        self.bases
            .get(i)
            .and_then(Option::as_ref)
            .map_or(0, |b| b.mapped)
    }

    /// Arena `i`'s base (`None` where it has none or the model is off).
    pub fn base(&self, i: usize) -> Option<&Base> {
        self.bases.get(i).and_then(Option::as_ref)
    }

    /// The modelled radix tree's leaves (`None` without a tree model).
    pub fn leaves(&self) -> Option<usize> {
        self.space.as_ref().map(|s| s.leaves.len())
    }

    /// The modelled address where the next mapping goes.
    pub fn cursor(&self) -> Option<u64> {
        self.space.as_ref().map(|s| s.cursor)
    }

    /// `arenas.create`'s control block for a new manual arena, carved from arena 0's base.
    pub(crate) fn ctl_arena(&mut self, bytes: u64) {
        self.base0_alloc(bytes, 16);
    }

    /// `base_alloc(b0, bytes, align)`: metadata of the process as a whole (`tcaches`).
    pub(crate) fn base0_alloc(&mut self, bytes: u64, align: u64) {
        if let (Some(c), Some(Some(b0))) = (self.classes.as_ref(), self.bases.get_mut(0)) {
            b0.alloc(bytes, align, c);
        }
    }

    /// A mapping the recorded program's allocator made (`before_first`: before the trace's
    /// first event, at start-up). The first such one places start-up's leaves (instead of the
    /// seeded place); every one is kept for the arena growth of its length that follows
    /// (see [`Space::map`]), so the leaves are made where the real allocator's were.
    pub(crate) fn recorded_mapping(&mut self, addr: u64, len: u64, before_first: bool) {
        let Some(s) = self.space.as_mut() else { return };
        if before_first && !s.startup_recorded {
            s.startup_recorded = true;
            let g = s.geometry;
            let n = s.leaves.len() as u64;
            s.leaves = startup_leaves(g, addr, (addr, addr + len), n);
            if g.node_bytes > 0 {
                s.nodes = std::iter::once(addr >> g.lg_node_span).collect();
            }
            s.cursor = addr;
            return;
        }
        if s.recorded.len() == RECORDED_MAX {
            s.recorded.pop_front();
        }
        s.recorded.push_back((addr, len));
    }

    /// Follows the arenas' new records and mappings; returns the bases' totals.
    pub fn update(&mut self, arenas: &mut [Option<ArenaModel>], made: &[bool]) -> BaseTotals {
        let Some(c) = self.classes.as_ref().filter(|_| self.on) else {
            return BaseTotals::default();
        };
        // Manual arenas (`arenas.create`) come after start.
        if self.bases.len() < arenas.len() {
            self.bases.resize(arenas.len(), None);
            if let Some(s) = self.space.as_mut() {
                s.vsize.resize(arenas.len(), 0);
                s.starts.resize(arenas.len(), vec![]);
            }
        }
        let mut splits = Vec::new();
        for (i, a) in arenas.iter_mut().enumerate() {
            if a.is_none() && !made[i] {
                continue;
            }
            if self.bases[i].is_none() {
                self.bases[i] = Some(Base::fresh(self.m.per_arena_allocated, c));
                if let Some(s) = self.space.as_mut() {
                    s.cursor = (s.cursor - BLOCK) / BLOCK * BLOCK;
                }
            }
            let Some(a) = a else { continue };
            let b = self.bases[i].as_mut().expect("made above");
            let before = b.mapped;
            b.records_to(a.extent_records(), c);
            // A base's new block (jemalloc aligns it to 2 MiB itself) is mapped before the
            // growth whose record needed it.
            let block = b.mapped - before;
            let new = match self.space.as_mut() {
                Some(s) => {
                    s.base_block(block);
                    let (nodes, leaves) = s.map(i, vsize(a));
                    s.note_mappings(i, a.mapping_sizes());
                    // Extents split anywhere in the mappings: a growth of more than a leaf's
                    // span has regions inside it that only such a boundary gives a leaf.
                    let (more_nodes, more_leaves) = match s.align.any() {
                        true => {
                            a.take_splits(&mut splits);
                            s.split_leaves(i, splits.drain(..))
                        }
                        false => (0, 0),
                    };
                    (nodes + more_nodes, leaves + more_leaves)
                }
                None => (0, 0),
            };
            let g = self.space.as_ref().map(|s| s.geometry);
            if let (Some(g), b0) = (g, self.bases[0].as_mut().expect("arena 0")) {
                let before = b0.mapped;
                for _ in 0..new.0 {
                    b0.alloc(g.node_bytes, CACHELINE, c);
                }
                for _ in 0..new.1 {
                    b0.alloc(g.leaf_bytes, CACHELINE, c);
                }
                // The tree's pieces come after the growth they register.
                let block = b0.mapped - before;
                if let Some(s) = self.space.as_mut() {
                    s.base_block(block);
                }
            }
        }
        let mut t = BaseTotals::default();
        for b in self.bases.iter().flatten() {
            t.allocated += b.allocated;
            t.resident += b.resident;
            t.mapped += b.mapped;
        }
        t
    }
}

/// Start-up's middle nodes and leaves (`rtree_bytes` of them), a node first on a
/// three-level tree.
fn startup_leaf_count(g: Geometry, m: &Metadata) -> u64 {
    let nodes0 = u64::from(g.node_bytes > 0);
    let n = m.rtree_bytes.saturating_sub(nodes0 * g.node_bytes) / g.leaf_bytes;
    n.max(1)
}

/// The tree's pieces start-up carved from `b0`, in order (a middle node, then the leaves).
fn startup_tree(g: Option<Geometry>, m: &Metadata) -> Vec<u64> {
    let Some(g) = g else { return Vec::new() };
    let node = (g.node_bytes > 0).then_some(g.node_bytes);
    let leaves = std::iter::repeat_n(g.leaf_bytes, startup_leaf_count(g, m) as usize);
    node.into_iter().chain(leaves).collect()
}

/// Start-up's `n` leaves: the heap's, then those of the mapping holding it (`[lo, hi)`:
/// start-up's extents, mapped top-down from there) downwards, then upwards, then any further
/// ones above.
fn startup_leaves(g: Geometry, heap: u64, (lo, hi): (u64, u64), n: u64) -> BTreeSet<u64> {
    let s = g.lg_leaf_span;
    let h = heap >> s;
    let (a, b) = match lo <= heap && heap < hi {
        true => (lo >> s, (hi - 1) >> s),
        false => (h, h),
    };
    let (mut from, mut to) = (h, h);
    while to - from + 1 < n && from > a {
        from -= 1;
    }
    while to - from + 1 < n && to < b {
        to += 1;
    }
    to = to.max(from + n - 1);
    (from..=to).collect()
}

impl Space {
    /// A new base block of `size` bytes (0: none) below the cursor, at a 2 MiB boundary.
    /// Only where the kernel aligns mappings (see `MetaState::start`).
    fn base_block(&mut self, size: u64) {
        if size > 0 && self.align.any() {
            self.cursor = self.cursor.saturating_sub(size) / BLOCK * BLOCK;
        }
    }

    /// Arena `i` now spans `v` bytes: maps its growth below the cursor; returns the middle
    /// nodes and leaves made.
    fn map(&mut self, i: usize, v: u64) -> (u64, u64) {
        let old = self.vsize[i];
        if v <= old {
            return (0, 0);
        }
        self.vsize[i] = v;
        let grown = v - old;
        let recorded = self.recorded.iter().position(|&(_, len)| len == grown);
        let (hi, lo) = match recorded.and_then(|k| self.recorded.remove(k)) {
            // Where the recorded program's allocator put it.
            Some((addr, len)) => {
                self.cursor = addr;
                (addr + len, addr)
            }
            None => {
                let lo = self.align.place(self.cursor, grown);
                let hi = lo + grown;
                self.cursor = lo;
                (hi, lo)
            }
        };
        self.placed = Some((lo, hi));
        let (mut nodes, mut leaves) = (0, 0);
        for addr in [lo, hi - 1] {
            let (n, l) = self.register(addr);
            nodes += n;
            leaves += l;
        }
        (nodes, leaves)
    }

    /// An extent boundary at `addr`: the middle node and leaf made for it (0 or 1 each).
    fn register(&mut self, addr: u64) -> (u64, u64) {
        let g = self.geometry;
        let node = g.node_bytes > 0 && self.nodes.insert(addr >> g.lg_node_span);
        let leaf = self.leaves.insert(addr >> g.lg_leaf_span);
        (node as u64, leaf as u64)
    }

    /// Arena `i`'s mappings are now `sizes` (by serial number): the new ones are where `map`
    /// last placed the growth, the first at its top (Linux maps top-down).
    fn note_mappings(&mut self, i: usize, sizes: &[u64]) {
        let placed = self.placed.take();
        let known = &mut self.starts[i];
        let mut top = placed.map(|(_, hi)| hi);
        for &len in sizes.iter().skip(known.len()) {
            let start = top.map(|t| t.saturating_sub(len));
            known.push(start);
            top = start;
        }
    }

    /// Extents split at `splits` (serial number of arena `i`'s mapping, offset in it): each
    /// registers the page below the split and the one above (`emap_split_prepare`, the lead's
    /// last page and the trail's first), making a leaf where it falls in a region without one
    /// (inside a mapping that spans more than a leaf's region; its ends made theirs when it
    /// was mapped). Returns the nodes and leaves made.
    fn split_leaves(&mut self, i: usize, splits: impl Iterator<Item = (u32, u64)>) -> (u64, u64) {
        let (mut nodes, mut leaves) = (0, 0);
        for (sn, at) in splits {
            let Some(&Some(start)) = self.starts[i].get(sn as usize) else {
                continue;
            };
            for addr in [start + at - 1, start + at] {
                let (n, l) = self.register(addr);
                nodes += n;
                leaves += l;
            }
        }
        (nodes, leaves)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shapes: 57 bits (a 256 KiB node and 512 KiB leaves over 128 MiB), 48 bits (2 MiB
    /// leaves over 1 GiB); anything else is not modelled.
    #[test]
    fn geometry_from_the_tree_size() {
        let g = Geometry::of(786_432, 4096).unwrap();
        assert_eq!(
            (g.leaf_bytes, g.lg_leaf_span, g.node_bytes),
            (512 << 10, 27, 256 << 10)
        );
        let g = Geometry::of(2 << 20, 4096).unwrap();
        assert_eq!(
            (g.leaf_bytes, g.lg_leaf_span, g.node_bytes),
            (2 << 20, 30, 0)
        );
        assert!(Geometry::of(0, 4096).is_none() && Geometry::of(12_345, 4096).is_none());
    }

    /// Start-up's two leaves, from a live run's clock line (python-threads, its
    /// `/proc/self/maps`): the table at 0x7fa3f8200080 in a 28 MiB mapping
    /// 0x7fa3f7200000-0x7fa3f8e00000 across the 128 MiB boundary 0x7fa3f8000000: the table's
    /// leaf and the one below it (the run's mappings then went down to 0x7fa3f3800000 with two
    /// leaves in all). Unknown mapping: the further leaf above, as before; one leaf: the
    /// table's only.
    #[test]
    fn startup_leaves_follow_the_table_mapping() {
        let g = Geometry::of(1_310_720, 4096).unwrap();
        let (heap, map) = (0x7fa3_f820_0080, (0x7fa3_f720_0000, 0x7fa3_f8e0_0000));
        let h = heap >> 27;
        assert_eq!(
            startup_leaves(g, heap, map, 2)
                .into_iter()
                .collect::<Vec<_>>(),
            vec![h - 1, h]
        );
        assert_eq!(
            startup_leaves(g, heap, (0, 0), 2)
                .into_iter()
                .collect::<Vec<_>>(),
            vec![h, h + 1]
        );
        assert_eq!(
            startup_leaves(g, heap, map, 1)
                .into_iter()
                .collect::<Vec<_>>(),
            vec![h]
        );
        // A mapping that does not hold the table is ignored.
        assert_eq!(
            startup_leaves(g, heap, (0x1000, 0x2000), 2)
                .into_iter()
                .collect::<Vec<_>>(),
            vec![h, h + 1]
        );
    }

    /// Start-up's tree by address width (hand derived from `rtree.h`, above): 57 bits as
    /// measured live (786,432: `stats.metadata_rtree` before the first event), 48 bits one
    /// 2 MiB leaf; both shapes the geometry knows.
    #[test]
    fn startup_tree_by_address_width() {
        assert_eq!(startup_rtree_bytes(57), 786_432);
        assert_eq!(startup_rtree_bytes(48), 2 << 20);
        for bits in [48, 57] {
            assert!(Geometry::of(startup_rtree_bytes(bits), 4096).is_some());
        }
        // The width read from /proc/cpuinfo's line (this machine's, as proc(5) prints it),
        // and the default for 57 bits is what was measured.
        let line = "address sizes\t: 46 bits physical, 57 bits virtual\n";
        assert_eq!(super::super::metadata::parse_vaddr_bits(line), Some(57));
        assert_eq!(
            super::super::metadata::parse_vaddr_bits("flags: la57\n"),
            None
        );
        let m = Metadata::for_vaddr_bits(57);
        assert_eq!((m.base_bytes, m.base_allocated), (1_449_984, 1_448_704));
    }

    /// Mappings go down from the cursor; one that reaches below a 128 MiB boundary makes a
    /// leaf, the next within that leaf none.
    #[test]
    fn a_mapping_across_a_leaf_boundary_makes_a_leaf() {
        let g = Geometry::of(786_432, 4096).unwrap();
        let top = (100u64 << 27) + (1 << 20);
        let mut s = Space {
            geometry: g,
            cursor: top,
            leaves: [100].into_iter().collect(),
            nodes: [top >> g.lg_node_span].into_iter().collect(),
            vsize: vec![0, 0],
            recorded: Default::default(),
            startup_recorded: false,
            align: Default::default(),
            starts: vec![vec![], vec![]],
            placed: None,
        };
        assert_eq!(s.map(1, 2 << 20), (0, 1));
        assert_eq!(s.cursor, top - (2 << 20));
        assert_eq!(s.map(1, 4 << 20), (0, 0));
        assert_eq!(s.map(1, 4 << 20), (0, 0), "no growth, no mapping");
    }

    /// A 192 MiB growth spans three 128 MiB regions: its ends make two leaves, and the one
    /// between gets its leaf only when an extent is split inside it (live on Linux 6.18: one
    /// leaf more, at the split, than the ends alone gave).
    #[test]
    fn a_split_inside_a_long_mapping_makes_the_middle_leaf() {
        let g = Geometry::of(786_432, 4096).unwrap();
        let top = (100u64 << 27) + (32 << 20);
        let mut s = Space {
            geometry: g,
            cursor: top,
            leaves: [100].into_iter().collect(),
            nodes: [top >> g.lg_node_span].into_iter().collect(),
            vsize: vec![0],
            recorded: Default::default(),
            startup_recorded: false,
            align: crate::process::MapAlign {
                huge_multiples: true,
                huge_others: false,
            },
            starts: vec![vec![]],
            placed: None,
        };
        let len = 192 << 20;
        assert_eq!(s.map(0, len), (0, 1), "the lower end's leaf, 98");
        s.note_mappings(0, &[len]);
        let start = top - len;
        assert_eq!(s.starts[0], vec![Some(start)]);
        let below_99 = (99u64 << 27) - start;
        let early = [(0, 4096), (0, below_99 - 4096)];
        assert_eq!(s.split_leaves(0, early.into_iter()), (0, 0));
        assert_eq!(
            s.split_leaves(0, [(0, below_99)].into_iter()),
            (0, 1),
            "trail in 99"
        );
        assert_eq!(
            s.split_leaves(0, [(0, below_99 + 4096)].into_iter()),
            (0, 0)
        );
        assert_eq!(
            s.split_leaves(0, [(1, 4096)].into_iter()),
            (0, 0),
            "unknown"
        );
        assert_eq!(s.leaves.len(), 3);
    }

    /// A recorded mapping of the growth's length is where the growth goes, whatever the
    /// cursor says: one within the heap's 1 GiB leaf makes none, one across a 1 GiB boundary
    /// (48-bit build, 2 MiB leaves) makes one (hand-derived from `rtree.h`'s shape); a growth
    /// of a length no recorded mapping has goes below the cursor.
    #[test]
    fn recorded_mappings_place_the_growths() {
        let g = Geometry::of(2 << 20, 4096).unwrap();
        let heap = (5u64 << 30) + (512 << 20);
        let mut s = Space {
            geometry: g,
            cursor: heap,
            leaves: [5].into_iter().collect(),
            nodes: BTreeSet::new(),
            vsize: vec![0],
            recorded: [
                (heap - (2 << 20), 2 << 20),
                ((5 << 30) - (1 << 20), 4 << 20),
            ]
            .into_iter()
            .collect(),
            startup_recorded: true,
            align: Default::default(),
            starts: vec![vec![], vec![]],
            placed: None,
        };
        assert_eq!(s.map(0, 2 << 20), (0, 0));
        assert_eq!(s.map(0, 6 << 20), (0, 1), "across 5 GiB: leaf 4 as well");
        assert_eq!(s.leaves, [4, 5].into_iter().collect());
        assert_eq!(s.cursor, (5 << 30) - (1 << 20));
        assert_eq!(
            s.map(0, 7 << 20),
            (0, 0),
            "1 MiB below the cursor: still leaf 4"
        );
        assert_eq!(s.cursor, (5 << 30) - (2 << 20));
    }
}
