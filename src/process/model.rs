//! The process: automatic arenas, the huge arena, one cache per thread, and the threads'
//! calls in trace order (`jemalloc.c`'s malloc/free/realloc paths, `arena_choose_hard`,
//! `arena_choose_maybe_huge`, `tsd_tcache_data_init`, `tsd_do_data_cleanup`).

use super::tcache::{CacheInfo, Item, Tcache};

mod cache;
mod decay;
mod gc;
mod meta;
mod view;
use super::{ProcessError, ProcessOptions, ProcessSnapshot, ProcessStats};
use crate::sim::{ArenaModel, SimError};
use crate::sizeclass::AllocatorConfig;
use crate::trace::{Event, Record, ThreadId};
pub use decay::DecayClock;
pub use view::{HeldBlock, LiveObject};

const NIL: u32 = u32::MAX;
/// `opt_tcache_gc_incr_bytes`: a GC step every 64 KiB allocated (and, apart, freed).
const GC_INCR_BYTES: u64 = 65536;

#[derive(Clone, Copy, Debug)]
struct Object {
    arena: u32,
    /// `NIL`: not live.
    extent: u32,
    usize: u64,
    request: u64,
    align: u64,
}

impl Object {
    /// Whether the id holds a live object (a dead one's extent is `NIL`).
    fn is_live(&self) -> bool {
        self.extent != NIL
    }

    /// A live object at `(arena, extent)`.
    fn placed((arena, extent): (u32, u32), usize: u64, request: u64, align: u64) -> Object {
        Object {
            arena,
            extent,
            usize,
            request,
            align,
        }
    }
}

const DEAD: Object = Object {
    arena: 0,
    extent: NIL,
    usize: 0,
    request: 0,
    align: 0,
};

/// What the metadata model starts from (`base_resident` summed over arenas: see
/// `model/meta.rs`): arena 0's base before the first event (it holds the global tables and
/// the radix tree) and a fresh arena's, as resident and allocated bytes, the radix tree's
/// bytes then (its shape follows from them), and where the trace's mappings start
/// (`below`, 0: drawn from the seed) and the heap start-up made (`heap`), as measured by the
/// live replayer's child (`crate::live::decay`).
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
        Metadata::for_vaddr_bits(machine_vaddr_bits().unwrap_or(48))
    }

    /// [`Metadata::measured_default`] for a jemalloc built for `bits` virtual address bits:
    /// the base outside the tree as measured (57 bits: 663,552 resident, 662,272 allocated),
    /// plus start-up's tree of that width (one leaf, and a middle node on a three-level
    /// tree: `rtree.h`'s rule, see `model/meta.rs`). Only 57 bits was measured; other widths
    /// are derived, and a 48-bit build's 2 MiB leaf starting a new base block is left out.
    pub fn for_vaddr_bits(bits: u32) -> Metadata {
        let rtree = meta::startup_rtree_bytes(bits);
        Metadata {
            base_bytes: 663_552 + rtree,
            per_arena_bytes: 94_208,
            base_allocated: 662_272 + rtree,
            per_arena_allocated: 92_880,
            rtree_bytes: rtree,
            below: 0,
            heap: 0,
            heap_mapping: (0, 0),
        }
    }
}

/// The virtual address bits this machine's CPU reports (`/proc/cpuinfo`: "address sizes :
/// 46 bits physical, 57 bits virtual"), `None` where unreadable.
pub fn machine_vaddr_bits() -> Option<u32> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_vaddr_bits(&info)
}

fn parse_vaddr_bits(info: &str) -> Option<u32> {
    let line = info.lines().find(|l| l.starts_with("address sizes"))?;
    let virt = line.split(',').find(|p| p.contains("virtual"))?;
    virt.split_whitespace().next()?.parse().ok()
}

/// A trace thread as jemalloc sees it after its first call.
#[derive(Clone, Debug)]
struct Thread {
    arena: u32,
    /// The internal-allocation arena (`tsd_iarena`), for the metadata only.
    iarena: u32,
    tcache: Option<Tcache>,
    allocated: u64,
    deallocated: u64,
    alloc_gc_last: u64,
    dalloc_gc_last: u64,
}

/// A modelled process. See the module documentation of [`crate::process`].
pub struct Process {
    config: AllocatorConfig,
    options: ProcessOptions,
    narenas: u32,
    /// `None` when the huge arena is off.
    huge: Option<u32>,
    oversize: u64,
    info: CacheInfo,
    /// Automatic arenas `0..narenas`, then the huge arena.
    arenas: Vec<Option<ArenaModel>>,
    nthreads: Vec<u32>,
    /// Threads bound to each arena for internal allocations, and the arenas only such a
    /// binding made (`arena_choose_hard`'s second choice): they exist, idle, with their
    /// base (the metadata model counts them; the arena model needs nothing of them).
    ithreads: Vec<u32>,
    imade: Vec<bool>,
    tcache_bytes: Vec<u64>,
    threads: Vec<Option<Thread>>,
    exited: Vec<bool>,
    objects: Vec<Object>,
    /// `thread.deallocated` of threads that have only freed so far.
    minimal_deallocated: Vec<u64>,
    small_max: u64,
    stats: ProcessStats,
    metadata: Metadata,
    meta: meta::MetaState,
    /// Either decay setting is not -1: arenas decay and threads tick.
    decay_on: bool,
    seed: u64,
    clock: decay::Clock,
    /// Each thread's decay ticker (made at its first call, a free included).
    tickers: Vec<Option<crate::sim::decay::Ticker>>,
    /// 5.3.1's clock-driven cache GC (`experimental_tcache_gc`, its default; `model/gc.rs`).
    clock_gc: bool,
}

impl Process {
    /// A process of the build `config` with `options` on `cpus` CPUs (for `narenas`).
    pub fn new(
        config: AllocatorConfig,
        options: ProcessOptions,
        cpus: u32,
    ) -> Result<Process, ProcessError> {
        let clock_gc = gc::clock_gc_on(config.version, &options);
        let mut arena0 = ArenaModel::new(config)?;
        let decay_on = options.dirty_decay_ms != -1 || options.muzzy_decay_ms != -1;
        if decay_on {
            let seed = crate::sim::decay::mix_seed(0, 0, 1);
            arena0.set_decay(options.dirty_decay_ms, options.muzzy_decay_ms, 0, seed);
        }
        let classes = arena0.classes().clone();
        let info = CacheInfo::new(&classes, &options, config.version);
        let narenas = options.narenas_for(cpus);
        let (huge, oversize) = if options.oversize_threshold > classes.large_maxclass()
            || options.oversize_threshold < classes.large_minclass()
        {
            (None, u64::MAX)
        } else {
            (Some(narenas), options.oversize_threshold)
        };
        let slots = narenas as usize + 1;
        let mut arenas: Vec<Option<ArenaModel>> = (0..slots).map(|_| None).collect();
        arenas[0] = Some(arena0);
        Ok(Process {
            config,
            options,
            narenas,
            huge,
            oversize,
            info,
            arenas,
            nthreads: vec![0; slots],
            ithreads: vec![0; slots],
            imade: vec![false; slots],
            tcache_bytes: vec![0; slots],
            threads: Vec::new(),
            exited: Vec::new(),
            objects: Vec::new(),
            minimal_deallocated: Vec::new(),
            small_max: classes.small_maxclass(),
            stats: ProcessStats::default(),
            decay_on,
            metadata: Metadata::default(),
            meta: meta::MetaState::default(),
            seed: 0,
            clock: decay::Clock::default(),
            tickers: Vec::new(),
            clock_gc,
        })
    }

    pub fn config(&self) -> &AllocatorConfig {
        &self.config
    }

    pub fn options(&self) -> &ProcessOptions {
        &self.options
    }

    /// Automatic arenas (the huge arena, when on, has index `narenas`).
    pub fn narenas(&self) -> u32 {
        self.narenas
    }

    pub fn huge_arena(&self) -> Option<u32> {
        self.huge
    }

    /// The bytes of one thread's cache block (`sz_sa2u` of the stacks, page aligned).
    pub fn cache_block_bytes(&self) -> u64 {
        let a0 = self.arena(0);
        a0.usable(0, self.info.block_request, self.config.page())
            .unwrap_or(0)
    }

    /// The live replayer's start (`crate::live::process`): its main thread's first call
    /// allocated a cache block in arena 0, start-up code left `residue` large bytes live
    /// there (libstdc++'s emergency pool under a preloaded jemalloc: 72,704 bytes ->
    /// 81,920), then the main thread freed its cache and left arena 0, which purged it.
    pub fn replayer_start(&mut self, residue: u64) -> Result<(), ProcessError> {
        let block = if self.options.tcache {
            let bytes = self.cache_block_bytes();
            Some(self.arena_mut(0).place(0, bytes)?)
        } else {
            None
        };
        if residue > 0 {
            self.arena_mut(0).place(0, residue)?;
        }
        if let Some(b) = block {
            self.arena_mut(0).remove(b);
        }
        self.arena_mut(0).purge_all();
        // The main thread's internal binding stays in arena 0 (`thread.arena` moves only
        // the application one): each new thread's internal choice then makes an arena ahead
        // of the application choice.
        self.ithreads[0] += 1;
        // The metadata was measured after start-up: it starts from here.
        self.set_metadata(self.metadata);
        Ok(())
    }

    pub fn stats(&self) -> &ProcessStats {
        &self.stats
    }

    /// Sets the metadata model (see [`Metadata`]); the default counts none.
    pub fn set_metadata(&mut self, m: Metadata) {
        self.metadata = m;
        let page = self.config.page();
        self.meta = meta::MetaState::start(m, &self.arenas, &self.imade, page, self.seed);
        self.refresh_totals();
    }

    /// The metadata model's radix-tree leaves and next mapping's address (`None` without a
    /// tree model: see [`Metadata`]).
    pub fn radix_leaves(&self) -> Option<(usize, u64)> {
        Some((self.meta.leaves()?, self.meta.cursor()?))
    }

    fn arena(&self, i: u32) -> &ArenaModel {
        self.arenas[i as usize].as_ref().expect("arena exists")
    }

    fn arena_mut(&mut self, i: u32) -> &mut ArenaModel {
        self.arenas[i as usize].as_mut().expect("arena exists")
    }

    /// Per arena: `(index, allocated, active, tcache bytes, bins)` of those that exist.
    pub fn snapshot(&self) -> ProcessSnapshot {
        super::snapshot_of(self.stats.events, &self.arenas, &self.tcache_bytes)
    }

    /// Applies one record.
    pub fn apply(&mut self, record: &Record) -> Result<(), ProcessError> {
        match record {
            Record::Site { .. } => Ok(()),
            Record::ThreadExit { thread, time_ns } => {
                self.stats.events += 1;
                self.advance_clock(self.stats.events, *time_ns)?;
                self.thread_exit(*thread);
                Ok(())
            }
            Record::Call(call) => {
                self.stats.events += 1;
                let n = self.stats.events;
                self.advance_clock(n, call.time_ns)?;
                let t = call.thread as usize;
                if self.exited.get(t).copied().unwrap_or(false) {
                    return Err(ProcessError::AfterExit {
                        event: n,
                        thread: call.thread,
                    });
                }
                // A thread whose first calls are frees stays minimal (`tsd_fetch_min` in
                // free/dallocx): no cache, no arena, its frees go to the owning arena.
                if matches!(call.event, Event::Free { .. }) && !self.started(t) {
                    return self.minimal_free(n, t, call.event);
                }
                self.ensure_thread(t)?;
                self.call(n, t, call.event)
            }
        }
    }

    fn call(&mut self, n: u64, t: usize, event: Event) -> Result<(), ProcessError> {
        match event {
            Event::Alloc { id, size, align } => {
                if self.live(id).is_some() {
                    return Err(SimError::AllocOfLiveId { event: n, id }.into());
                }
                let usize = self.arena(0).usable(n, size, align)?;
                let placed = self.alloc(n, t, usize, align)?;
                self.set(id, Object::placed(placed, usize, size, align));
                self.stats.live_objects += 1;
                self.stats.requested_bytes += size;
                self.alloc_event(t, usize);
            }
            Event::Free { id } => {
                let obj = self
                    .live(id)
                    .ok_or(SimError::FreeOfDeadId { event: n, id })?;
                self.objects[id as usize] = DEAD;
                self.free(t, obj);
                self.stats.live_objects -= 1;
                self.stats.requested_bytes -= obj.request;
                self.dalloc_event(t, obj.usize);
            }
            Event::Realloc { id, size } => {
                let obj = self
                    .live(id)
                    .ok_or(SimError::ReallocOfUnknownId { event: n, id })?;
                let usize = self.arena(0).usable(n, size, obj.align)?;
                let placed = self.realloc(n, t, obj, usize)?;
                self.set(id, Object::placed(placed, usize, size, obj.align));
                self.stats.requested_bytes = self.stats.requested_bytes - obj.request + size;
                self.alloc_event(t, usize);
                self.dalloc_event(t, obj.usize);
            }
        }
        self.refresh_totals();
        Ok(())
    }

    fn started(&self, t: usize) -> bool {
        self.threads.get(t).is_some_and(Option::is_some)
    }

    fn minimal_free(&mut self, n: u64, t: usize, event: Event) -> Result<(), ProcessError> {
        let Event::Free { id } = event else {
            unreachable!("frees only")
        };
        let obj = self
            .live(id)
            .ok_or(SimError::FreeOfDeadId { event: n, id })?;
        self.objects[id as usize] = DEAD;
        self.arena_mut(obj.arena).remove(obj.extent);
        self.tick(t, obj.arena, 1);
        self.stats.live_objects -= 1;
        self.stats.requested_bytes -= obj.request;
        if t >= self.minimal_deallocated.len() {
            self.minimal_deallocated.resize(t + 1, 0);
        }
        self.minimal_deallocated[t] += obj.usize;
        self.refresh_totals();
        Ok(())
    }

    fn refresh_totals(&mut self) {
        let (mut alloc, mut active) = (0, 0);
        let (mut dirty, mut muzzy, mut retained) = (0, 0, 0);
        for a in self.arenas.iter().flatten() {
            alloc += a.stats().allocated_bytes;
            active += a.stats().active_bytes;
            let p = a.page_sets();
            dirty += p.dirty_bytes;
            muzzy += p.muzzy_bytes;
            retained += p.retained_bytes;
        }
        self.stats.allocated_bytes = alloc;
        self.stats.active_bytes = active;
        self.stats.dirty_bytes = dirty;
        self.stats.muzzy_bytes = muzzy;
        self.stats.retained_bytes = retained;
        self.stats.metadata_bytes = self.meta.update(&self.arenas, &self.imade);
        self.stats.resident_bytes = active + dirty + self.stats.metadata_bytes;
        self.stats.mapped_bytes = active + dirty + muzzy;
        self.stats.time_ns = self.clock.now_ns;
        self.stats.tcache_bytes = self.tcache_bytes.iter().sum();
        self.stats.threads_live = self.threads.iter().flatten().count() as u64;
    }

    #[inline]
    fn live(&self, id: u32) -> Option<Object> {
        self.objects
            .get(id as usize)
            .copied()
            .filter(Object::is_live)
    }

    fn set(&mut self, id: u32, obj: Object) {
        let i = id as usize;
        if i >= self.objects.len() {
            self.objects.resize(i + 1, DEAD);
        }
        self.objects[i] = obj;
    }

    /// A thread's first call: `tsd_tcache_data_init` allocates its cache block from arena 0
    /// (`ipallocztm(..., arena_get(0))`), then `arena_choose` binds it.
    fn ensure_thread(&mut self, t: usize) -> Result<(), ProcessError> {
        if t >= self.threads.len() {
            self.threads.resize(t + 1, None);
            self.exited.resize(t + 1, false);
        }
        if self.threads[t].is_some() {
            return Ok(());
        }
        let block = if self.options.tcache {
            let bytes = self.cache_block_bytes();
            let n = self.stats.events;
            let extent = self.arena_mut(0).place(n, bytes)?;
            self.tick(t, 0, 1);
            Some(Item { arena: 0, extent })
        } else {
            None
        };
        let iarena = self.choose_internal();
        self.ithreads[iarena as usize] += 1;
        let arena = self.choose_arena()?;
        self.nthreads[arena as usize] += 1;
        // te_init: the event counters start from the bytes counted so far.
        let deallocated = self.minimal_deallocated.get(t).copied().unwrap_or(0);
        self.threads[t] = Some(Thread {
            arena,
            iarena,
            tcache: block.map(|b| Tcache::new(&self.info, arena, b)),
            allocated: 0,
            deallocated,
            alloc_gc_last: 0,
            dalloc_gc_last: deallocated,
        });
        Ok(())
    }

    /// `arena_choose_hard`'s internal choice, made on the arenas as they were before the
    /// application choice: like it, on the internal bindings' counts; a new arena it makes
    /// is the same the application choice makes, if that one makes one.
    fn choose_internal(&mut self) -> u32 {
        let n = self.narenas as usize;
        let (mut choose, mut first_null) = (0, n);
        for i in 1..n {
            if self.arenas[i].is_some() || self.imade[i] {
                if self.ithreads[i] < self.ithreads[choose] {
                    choose = i;
                }
            } else if first_null == n {
                first_null = i;
            }
        }
        if self.ithreads[choose] == 0 || first_null == n {
            return choose as u32;
        }
        self.imade[first_null] = true;
        first_null as u32
    }

    /// `arena_choose_hard` (application arena): the first arena with the fewest threads;
    /// if it has threads and an index below `narenas` is still free, a new arena there.
    fn choose_arena(&mut self) -> Result<u32, ProcessError> {
        let n = self.narenas as usize;
        let mut choose = 0;
        let mut first_null = n;
        for i in 1..n {
            if self.arenas[i].is_some() {
                if self.nthreads[i] < self.nthreads[choose] {
                    choose = i;
                }
            } else if first_null == n {
                first_null = i;
            }
        }
        if self.nthreads[choose] == 0 || first_null == n {
            return Ok(choose as u32);
        }
        self.arenas[first_null] = Some(self.new_arena(first_null as u32)?);
        Ok(first_null as u32)
    }

    /// `arena_choose_maybe_huge` for an allocation that bypasses the cache.
    fn arena_for(&mut self, t: usize, usize: u64) -> Result<u32, ProcessError> {
        if usize >= self.oversize {
            let h = self.huge.expect("oversize implies a huge arena");
            if self.arenas[h as usize].is_none() {
                self.arenas[h as usize] = Some(self.new_arena(h)?);
            }
            return Ok(h);
        }
        Ok(self.thread(t).arena)
    }

    fn thread(&self, t: usize) -> &Thread {
        self.threads[t].as_ref().expect("thread started")
    }

    fn bin_of(&self, usize: u64) -> usize {
        if usize <= self.small_max {
            self.arena(0).bin_index(usize)
        } else {
            // With tcache_max below the largest small class no large bin is cached (and
            // `size` stops before the small bins end): any index >= nhbins says so.
            let large = self.info.size.get(self.info.nbins_small..).unwrap_or(&[]);
            self.info.nbins_small + large.partition_point(|&s| s < usize)
        }
    }

    fn cached(&self, t: usize, bin: usize) -> bool {
        self.thread(t).tcache.is_some()
            && bin < self.info.nhbins()
            && self.info.ncached_max[bin] > 0
    }

    /// An allocation of `usize` bytes on thread `t` (`imalloc_body` / `ipalloct`).
    fn alloc(
        &mut self,
        n: u64,
        t: usize,
        usize: u64,
        align: u64,
    ) -> Result<(u32, u32), ProcessError> {
        let bin = self.bin_of(usize);
        let small = usize <= self.small_max;
        // arena_palloc: an aligned large request goes straight to large_malloc/large_palloc.
        if (small || align <= 1) && self.cached(t, bin) {
            if let Some(item) = self.cache_pop(t, bin) {
                return Ok((item.arena, item.extent));
            }
            let arena = self.thread(t).arena;
            if small {
                self.fill(n, t, bin)?;
                let item = self.cache_pop(t, bin).expect("filled");
                return Ok((item.arena, item.extent));
            }
            // tcache_alloc_large: one object from the thread's arena, no fill.
            let extent = self.arena_mut(arena).place(n, usize)?;
            self.tick(t, arena, 1);
            return Ok((arena, extent));
        }
        let arena = if small {
            self.thread(t).arena
        } else {
            self.arena_for(t, usize)?
        };
        let extent = self.arena_mut(arena).place(n, usize)?;
        self.tick(t, arena, 1);
        Ok((arena, extent))
    }

    /// `tsd_do_data_cleanup`: the thread leaves its arena, then `tcache_destroy` flushes
    /// every bin (small first, by index), frees the cache block from arena 0 and, when the
    /// arena has no thread left, purges all its dirty pages (`arena_decay(.., all)`).
    fn thread_exit(&mut self, thread: ThreadId) {
        let t = thread as usize;
        if t >= self.threads.len() {
            self.threads.resize(t + 1, None);
            self.exited.resize(t + 1, false);
        }
        self.exited[t] = true;
        let Some(th) = self.threads[t].as_ref() else {
            return;
        };
        let arena = th.arena;
        self.nthreads[arena as usize] -= 1;
        self.ithreads[th.iarena as usize] -= 1;
        if let Some(tc) = th.tcache.as_ref() {
            let block = tc.block;
            for bin in 0..self.info.nhbins() {
                self.flush(t, bin, 0);
            }
            self.arena_mut(block.arena).remove(block.extent);
            self.tick(t, block.arena, 1);
            // "Manually trigger decay": arena 0 (the block's), then the thread's arena.
            self.decay_check(0);
            if self.nthreads[arena as usize] == 0 {
                self.arena_mut(arena).purge_all();
            } else {
                self.decay_check(arena);
            }
        }
        self.threads[t] = None;
        self.refresh_totals();
    }
}
