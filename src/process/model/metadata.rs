//! What the metadata model starts from, as measured live, and the machine's address width.

/// What the metadata model starts from (`base_resident` summed over arenas: see
/// `model/meta.rs`): arena 0's base before the first event (it holds the global tables and
/// the radix tree) and a fresh arena's, as resident and allocated bytes, the radix tree's
/// bytes then (its shape follows from them), and where the trace's mappings start
/// (`below`, 0: drawn from the seed) and the heap start-up made (`heap`), as measured by the
/// live replayer's child (`crate::check::clocked_child`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Metadata {
    pub base_bytes: u64,
    pub per_arena_bytes: u64,
    pub base_allocated: u64,
    pub per_arena_allocated: u64,
    /// 0: no radix-tree model.
    pub rtree_bytes: u64,
    pub below: u64,
    pub heap: u64,
    /// The mapping that holds `heap`, `[start, end)` (start-up's extents: where its leaves
    /// lie; `(0, 0)`: unknown, its further leaves are taken to lie above the heap's).
    pub heap_mapping: (u64, u64),
    /// Extent records arena 0's base could still carve before it maps a new block, as
    /// measured (`None`: taken from the bytes above, to a record or two: see
    /// `model/base.rs`).
    pub base_records: Option<u64>,
    /// The block `mallctl` keeps in arena 0's base for each arena `arenas.create` makes
    /// (`ctl.c`, `arenas_i_impl`: the arena's statistics), as measured (0: the build's
    /// default, `ctl_arena_default`).
    pub ctl_arena_bytes: u64,
    /// How the kernel places the trace's mappings (probed on this machine:
    /// [`machine_map_align`]).
    pub map_align: MapAlign,
    /// The live child made its idle arena (the fresh one measured) after its workers, so
    /// its base block lies below their stacks (on the clock); without the clock it is made
    /// at start-up, above them.
    pub idle_below: bool,
}

/// The boundary Linux aligns large anonymous mappings to (`PMD_SIZE` on x86-64).
const HUGE: u64 = 2 << 20;

/// Where the kernel puts an anonymous mapping made without an address: top-down, just below
/// the free space's top, or (Linux 6.7 on, for transparent huge pages,
/// `__get_unmapped_area`'s `thp_get_unmapped_area`) at the highest 2 MiB boundary below
/// that, leaving a hole above it: later kernels do this only when the length is a multiple
/// of 2 MiB. Each kind of length as this kernel treats it, measured at run time (kernel
/// versions and their back-ports differ); the default aligns none, as before 6.7.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MapAlign {
    /// Lengths that are multiples of 2 MiB.
    pub huge_multiples: bool,
    /// Other lengths of 2 MiB or more.
    pub huge_others: bool,
}

impl MapAlign {
    /// Whether the kernel aligns any mapping.
    pub fn any(self) -> bool {
        self.huge_multiples || self.huge_others
    }

    /// Where a mapping of `len` bytes starts when the free space above ends at `top`.
    pub(super) fn place(self, top: u64, len: u64) -> u64 {
        let lo = top.saturating_sub(len);
        let aligned = match len.is_multiple_of(HUGE) {
            true => self.huge_multiples,
            false => self.huge_others && len >= HUGE,
        };
        match aligned {
            true => lo / HUGE * HUGE,
            false => lo,
        }
    }
}

/// How this machine's kernel places anonymous mappings (see [`MapAlign`]), probed once: a
/// 4 MiB and a 3 MiB mapping.
pub fn machine_map_align() -> MapAlign {
    static PROBED: std::sync::OnceLock<MapAlign> = std::sync::OnceLock::new();
    *PROBED.get_or_init(|| MapAlign {
        huge_multiples: kernel_aligns(4 << 20),
        huge_others: kernel_aligns(3 << 20),
    })
}

/// Whether three anonymous mappings of `len` bytes all start at a 2 MiB boundary, each but
/// the first made after a few pages mapped just below the one before (so that, placed just
/// below them, it could not start at the boundary the one before did). Nothing is touched
/// (no access, no reserve), and all is unmapped again.
fn kernel_aligns(len: usize) -> bool {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let map = |at: usize, len: usize| {
        // SAFETY: a fresh private anonymous mapping (`at` only a hint), never accessed,
        // unmapped below.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some(p as usize)
    };
    let mut made = Vec::new();
    let mut aligned = true;
    let mut last: Option<usize> = None;
    for pages in [1, 3, 5] {
        let filler = last.and_then(|a| map(a.checked_sub(pages * page)?, pages * page));
        made.extend(filler.map(|f| (f, pages * page)));
        match map(0, len) {
            Some(a) => {
                made.push((a, len));
                aligned &= (a as u64).is_multiple_of(HUGE);
                last = Some(a);
            }
            None => aligned = false,
        }
    }
    for (a, len) in made {
        // SAFETY: mapped above, by this function.
        unsafe { libc::munmap(a as *mut libc::c_void, len) };
    }
    aligned
}

/// [`Metadata::ctl_arena_bytes`] as measured on the live replayer's child (4 KiB pages, the
/// default classes): 37,856 bytes under Debian's 5.3.0, 41,136 under the linked 5.3.1 (each
/// `arenas.create` grew `stats.arenas.0.base` by that much beyond the new arena's own base).
pub(crate) fn ctl_arena_default(version: crate::sizeclass::JemallocVersion) -> u64 {
    match version {
        crate::sizeclass::JemallocVersion::V5_3_0 => 37_856,
        _ => 41_136,
    }
}

impl Metadata {
    /// The metadata the live replayer's child starts from on this machine: measured here on
    /// the linked jemalloc 5.3.1 (4 KiB pages, 8 arenas, 57 address bits) before its first
    /// event (`fragsim replay data/traces/cpp-threads-map.trace --process --malloc-conf
    /// dirty_decay_ms:200,muzzy_decay_ms:0 --time-scale 10 --live --honour-clock --runs 5`,
    /// the child's clock line; the same in all five runs): arena 0's base 1,449,984 bytes
    /// resident (1,448,704 allocated), of which the radix tree 786,432 (its middle node and
    /// one leaf; in some runs one leaf more); a fresh arena's 94,208 resident, 92,880
    /// allocated. Addresses are drawn from the seed.
    ///
    /// The radix tree's shape follows from the virtual address width jemalloc was built for
    /// (`LG_VADDR`, which its configure reads through CPUID on the machine that builds it):
    /// this machine's (`/proc/cpuinfo` "address sizes", [`machine_vaddr_bits`]; 48 bits, the
    /// configure's own default, where unknown), see [`Metadata::for_vaddr_bits`].
    pub fn measured_default() -> Metadata {
        Metadata::measured_for_vaddr_bits(machine_vaddr_bits().unwrap_or(48))
    }

    /// [`Metadata::measured_default`] for a jemalloc built for `bits` address bits (a library
    /// built on another machine), on this machine's kernel.
    pub fn measured_for_vaddr_bits(bits: u32) -> Metadata {
        Metadata {
            map_align: machine_map_align(),
            ..Metadata::for_vaddr_bits(bits)
        }
    }

    /// [`Metadata::measured_default`] for a jemalloc built for `bits` virtual address bits:
    /// the base outside the tree as measured (57 bits: 663,552 resident, 662,272 allocated),
    /// plus start-up's tree of that width (one leaf, and a middle node on a three-level
    /// tree: `rtree.h`'s rule, see `model/meta.rs`). Only 57 bits was measured; other widths
    /// are derived, and a 48-bit build's 2 MiB leaf starting a new base block is left out.
    pub fn for_vaddr_bits(bits: u32) -> Metadata {
        let rtree = super::meta::startup_rtree_bytes(bits);
        Metadata {
            base_bytes: 663_552 + rtree,
            per_arena_bytes: 94_208,
            base_allocated: 662_272 + rtree,
            per_arena_allocated: 92_880,
            rtree_bytes: rtree,
            below: 0,
            heap: 0,
            heap_mapping: (0, 0),
            base_records: None,
            ctl_arena_bytes: 0,
            map_align: MapAlign::default(),
            idle_below: false,
        }
    }
}

/// The virtual address bits this machine's CPU reports (`/proc/cpuinfo`: "address sizes :
/// 46 bits physical, 57 bits virtual"), `None` where unreadable.
pub fn machine_vaddr_bits() -> Option<u32> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_vaddr_bits(&info)
}

pub(super) fn parse_vaddr_bits(info: &str) -> Option<u32> {
    let line = info.lines().find(|l| l.starts_with("address sizes"))?;
    let virt = line.split(',').find(|p| p.contains("virtual"))?;
    virt.split_whitespace().next()?.parse().ok()
}
