//! The process: automatic arenas, the huge arena, one cache per thread, and the threads'
//! calls in trace order (`jemalloc.c`'s malloc/free/realloc paths, `arena_choose_hard`,
//! `arena_choose_maybe_huge`, `tsd_tcache_data_init`, `tsd_do_data_cleanup`).

use super::tcache::{CacheInfo, Tcache};

mod api;
mod background;
mod base;
mod cache;
mod clock;
mod control;
mod explicit;
mod gc;
mod meta;
mod metadata;
pub use api::{ArenaChoice, ManualArenas};
mod reentrant;
mod stats_view;
mod threads;
mod view;
use super::{ProcessError, ProcessOptions, ProcessSnapshot, ProcessStats};
use crate::sim::{ArenaModel, SimError};
use crate::sizeclass::{AllocatorConfig, JemallocVersion};
use crate::trace::{Event, Record, ThreadId};
pub use base::{edata_bytes, header_bytes as base_header_bytes};
pub use clock::DecayClock;
pub use metadata::{machine_map_align, machine_vaddr_bits, MapAlign, Metadata};
pub use reentrant::ReentrantTally;
pub use stats_view::{ArenaView, DumpAt, StatsView};
pub use view::HeldBlock;

const NIL: u32 = u32::MAX;
/// `opt_tcache_gc_incr_bytes`: a GC step every 64 KiB allocated (and, apart, freed).
const GC_INCR_BYTES: u64 = 65536;

/// An allocation request as jemalloc's paths see it: the bytes asked for, their usable size,
/// the alignment (0 or 1: none).
#[derive(Clone, Copy, Debug)]
struct Ask {
    size: u64,
    usize: u64,
    align: u64,
}

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

/// A trace thread as jemalloc sees it after its first call.
#[derive(Clone, Debug)]
struct Thread {
    /// Whether the thread is bound to its arenas yet: at its start when it has a cache
    /// (`tsd_tcache_data_init`), else at its first call that chooses an arena
    /// (`arena_choose`: not one served by the huge arena or a named one).
    bound: bool,
    arena: u32,
    /// The internal-allocation arena (`tsd_iarena`), for the metadata only.
    iarena: u32,
    tcache: Option<Tcache>,
    allocated: u64,
    deallocated: u64,
    alloc_gc_last: u64,
    dalloc_gc_last: u64,
}

/// What the live replayer's start-up left live before its first event (its `baseline` line):
/// large bytes in arena 0, the usable size of one small region in arena 0, large bytes in the
/// huge arena.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StartupResidue {
    pub large: u64,
    pub small: u64,
    pub huge: u64,
}

impl StartupResidue {
    /// The bytes left in arena 0.
    pub(crate) fn in_arena0(&self) -> u64 {
        self.large + self.small
    }
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
    /// The trace's manual arenas (`MALLOCX_ARENA` beyond the automatic ones), by first use.
    manual: api::ManualArenas,
    threads: Vec<Option<Thread>>,
    exited: Vec<bool>,
    objects: Vec<Object>,
    /// Threads that have only freed so far (`tsd_state_minimal_initialized`).
    minimal: Vec<threads::MinimalTsd>,
    small_max: u64,
    stats: ProcessStats,
    metadata: Metadata,
    meta: meta::MetaState,
    /// Either decay setting is not -1: arenas decay and threads tick.
    decay_on: bool,
    seed: u64,
    clock: clock::Clock,
    /// Each thread's decay ticker (made at its first call, a free included).
    tickers: Vec<Option<crate::sim::decay::Ticker>>,
    /// 5.3.1's clock-driven cache GC (`experimental_tcache_gc`, its default; `model/gc.rs`).
    clock_gc: bool,
    /// Background purging threads (`background_thread:true`; `model/background.rs`).
    bg: Option<background::Background>,
    /// Reentrant calls, and the thread events they held back (`model/reentrant.rs`).
    reentrant: reentrant::ReentrantTally,
    /// `malloc_stats_print`'s buffer while a dump runs (internal bytes of arena 0).
    print_buffer: u64,
    /// Caches made with `tcache.create` (`model/explicit.rs`).
    explicit: explicit::ExplicitCaches,
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
        let bg = options
            .background_thread
            .then(|| background::Background::new(options.max_background_threads, slots));
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
            manual: api::ManualArenas::default(),
            threads: Vec::new(),
            exited: Vec::new(),
            objects: Vec::new(),
            minimal: Vec::new(),
            small_max: classes.small_maxclass(),
            stats: ProcessStats::default(),
            decay_on,
            metadata: Metadata::default(),
            meta: meta::MetaState::default(),
            seed: 0,
            clock: clock::Clock::default(),
            tickers: Vec::new(),
            clock_gc,
            bg,
            reentrant: Default::default(),
            print_buffer: 0,
            explicit: Default::default(),
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

    /// The live replayer's start (`crate::check::process`): its main thread's first call
    /// allocated a cache block in arena 0, start-up code left `residue` large bytes live
    /// there (libstdc++'s emergency pool under a preloaded jemalloc: 72,704 bytes ->
    /// 81,920), then the main thread freed its cache and left arena 0, which purged it.
    pub fn replayer_start(&mut self, residue: u64) -> Result<(), ProcessError> {
        self.replayer_start_with(StartupResidue {
            large: residue,
            ..StartupResidue::default()
        })
    }

    /// [`Process::replayer_start`] with everything start-up left: large bytes in arena 0,
    /// one small region there (the same pool on a build whose pages make 72,704 bytes a
    /// small size: 64 KiB pages put it in the 80 KiB bin, above the cache's classes, so it
    /// comes from the arena's bin), and large bytes in the huge arena (its blocks at or
    /// above a low `oversize_threshold`).
    pub(crate) fn replayer_start_with(
        &mut self,
        residue: StartupResidue,
    ) -> Result<(), ProcessError> {
        let block = if self.options.tcache {
            let bytes = self.cache_block_bytes();
            Some(self.arena_mut(0).place(0, bytes)?)
        } else {
            None
        };
        if residue.large > 0 {
            self.arena_mut(0).place(0, residue.large)?;
        }
        if residue.small > 0 {
            self.arena_mut(0).place(0, residue.small)?;
        }
        let huge_residue = residue.huge;
        if let (Some(h), true) = (self.huge, huge_residue > 0) {
            if self.arenas[h as usize].is_none() {
                self.arenas[h as usize] = Some(self.new_arena(h)?);
            }
            self.arena_mut(h).place(0, huge_residue)?;
        }
        if let Some(b) = block {
            self.arena_mut(0).remove(b);
        }
        // arena_migrate purges the arena left, but in 5.3.1 not with background threads on
        // (arena 0's thread then purges it on its clock).
        if !(self.background_on() && self.config.version == JemallocVersion::V5_3_1) {
            self.arena_mut(0).purge_all();
        }
        self.background_after_call();
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

    /// Sets the metadata model (see `Metadata`); the default counts none.
    pub fn set_metadata(&mut self, m: Metadata) {
        self.metadata = m;
        let page = self.config.page();
        self.meta = meta::MetaState::start(m, &self.arenas, &self.imade, page, self.seed);
        self.refresh_totals();
    }

    /// The metadata model's radix-tree leaves and next mapping's address (`None` without a
    /// tree model: see `Metadata`).
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
        let base_mapped = |i: usize| match self.meta.is_on() {
            true => self.meta.base_mapped(i),
            false => super::BASE_BLOCK_BYTES,
        };
        super::snapshot_of(&self.stats, &self.arenas, &self.tcache_bytes, base_mapped)
    }

    /// `internal`: the live threads' cache blocks and the explicit caches' (both allocated in
    /// arena 0 as internal: in `stats.metadata` as well as in `stats.allocated`).
    fn internal_bytes(&self) -> u64 {
        let threads = self.threads.iter().flatten();
        let caches = threads.filter(|t| t.tcache.is_some()).count() as u64;
        let blocks = match caches {
            0 => 0,
            n => n * self.cache_block_bytes(),
        };
        let explicit = match self.explicit.made() {
            0 => 0,
            n => n * self.explicit_block_bytes(),
        };
        blocks + explicit + self.print_buffer
    }

    /// Applies one record.
    pub fn apply(&mut self, record: &Record) -> Result<(), ProcessError> {
        match record {
            Record::Site { .. } => Ok(()),
            Record::Mapping { addr, len } => {
                self.meta
                    .recorded_mapping(*addr, *len, self.stats.events == 0);
                Ok(())
            }
            Record::ThreadExit { thread, time_ns } => {
                self.stats.events += 1;
                self.advance_clock(self.stats.events, *time_ns)?;
                self.background_until();
                self.thread_exit(*thread);
                self.background_after_call();
                Ok(())
            }
            Record::Control {
                thread,
                time_ns,
                control,
            } => self.apply_control(*thread, *time_ns, *control),
            Record::Call(call) => {
                self.stats.events += 1;
                let n = self.stats.events;
                self.advance_clock(n, call.time_ns)?;
                self.background_until();
                let t = call.thread as usize;
                if self.exited.get(t).copied().unwrap_or(false) {
                    return Err(ProcessError::AfterExit {
                        event: n,
                        thread: call.thread,
                    });
                }
                // A thread whose first calls are frees stays minimal (`tsd_fetch_min` in
                // free/dallocx): no cache, no arena, its frees go to the owning arena; 5.3.1
                // turns it nominal at its 128th such call (`model/threads.rs`).
                if matches!(call.event, Event::Free { .. })
                    && !self.started(t)
                    && self.stays_minimal(t)
                {
                    self.minimal_free(n, t, call.event)?;
                } else if call.reentrant && !self.started(t) {
                    // A thread whose every call is reentrant: jemalloc's own (a background
                    // thread starting its siblings), on internal state that never starts.
                    self.internal_call(n, t, call.event)?;
                } else {
                    self.ensure_thread(t)?;
                    // A call made inside another allocator call: arena 0, no cache; one
                    // through jemalloc's API: its arena and cache flags.
                    let special = (call.reentrant && self.reentrant_call(n, t, call.event)?)
                        || (call.mallocx_flags != 0 && self.api_call(n, t, call)?);
                    if !special {
                        self.call(n, t, call.event)?;
                    }
                }
                self.background_after_call();
                Ok(())
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
                let placed = self.alloc(n, t, Ask { size, usize, align })?;
                self.set(id, Object::placed(placed, usize, size, align));
                self.stats.live_objects += 1;
                self.stats.requested_bytes += size;
                self.alloc_event(t, usize);
            }
            Event::Free { id } => {
                let obj = self.take_object(n, id)?;
                self.free(t, obj);
                self.dalloc_event(t, obj.usize);
            }
            Event::Realloc { id, size } => {
                self.realloc_object(n, t, id, size, |p, obj, usize| p.realloc(n, t, obj, usize))?
            }
        }
        self.refresh_totals();
        Ok(())
    }

    /// A realloc of object `id` to `size` on thread `t`, `place` keeping or moving it (as
    /// `realloc`, or with `rallocx`'s flags): the object's new place and the counts.
    fn realloc_object(
        &mut self,
        n: u64,
        t: usize,
        id: u32,
        size: u64,
        place: impl FnOnce(&mut Process, Object, u64) -> Result<(u32, u32), ProcessError>,
    ) -> Result<(), ProcessError> {
        let obj = self
            .live(id)
            .ok_or(SimError::ReallocOfUnknownId { event: n, id })?;
        let usize = self.arena(0).usable(n, size, obj.align)?;
        let placed = place(self, obj, usize)?;
        self.set(id, Object::placed(placed, usize, size, obj.align));
        self.stats.requested_bytes = self.stats.requested_bytes - obj.request + size;
        self.alloc_event(t, usize);
        self.dalloc_event(t, obj.usize);
        Ok(())
    }

    fn started(&self, t: usize) -> bool {
        self.threads.get(t).is_some_and(Option::is_some)
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
        let base = self.meta.update(&mut self.arenas, &self.imade);
        self.stats.metadata_bytes = base.resident;
        self.stats.metadata_allocated_bytes = base.allocated + self.internal_bytes();
        self.stats.resident_bytes = active + dirty + base.resident;
        self.stats.mapped_bytes = active + dirty + muzzy + base.mapped;
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

    /// Object `id`, freed now: no longer live, out of the counts.
    fn take_object(&mut self, n: u64, id: u32) -> Result<Object, ProcessError> {
        let obj = self
            .live(id)
            .ok_or(SimError::FreeOfDeadId { event: n, id })?;
        self.objects[id as usize] = DEAD;
        self.stats.live_objects -= 1;
        self.stats.requested_bytes -= obj.request;
        Ok(obj)
    }

    /// Places a request of `size` (`usize` bytes) as object `id` in arena 0, no cache (a
    /// reentrant call's, or jemalloc's own thread's).
    fn place_in_arena0(
        &mut self,
        n: u64,
        t: usize,
        id: u32,
        size: u64,
        align: u64,
    ) -> Result<u64, ProcessError> {
        let usize = self.arena(0).usable(n, size, align)?;
        let extent = self.arena_mut(0).place(n, usize)?;
        self.tick(t, 0, 1);
        self.set(id, Object::placed((0, extent), usize, size, align));
        self.stats.live_objects += 1;
        self.stats.requested_bytes += size;
        Ok(usize)
    }

    fn set(&mut self, id: u32, obj: Object) {
        let i = id as usize;
        if i >= self.objects.len() {
            self.objects.resize(i + 1, DEAD);
        }
        self.objects[i] = obj;
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

    /// An allocation on thread `t` (`imalloc_body` / `ipalloct`).
    fn alloc(&mut self, n: u64, t: usize, ask: Ask) -> Result<(u32, u32), ProcessError> {
        self.alloc_in(n, t, ask, None, true)
    }

    /// [`Process::alloc`] from arena `named` when a call names one (`MALLOCX_ARENA`: a cache
    /// miss fills from it, an uncached size is placed in it), through the thread's cache
    /// unless `cache` is false (`MALLOCX_TCACHE_NONE`).
    fn alloc_in(
        &mut self,
        n: u64,
        t: usize,
        Ask { size, usize, align }: Ask,
        named: Option<u32>,
        cache: bool,
    ) -> Result<(u32, u32), ProcessError> {
        let bin = self.bin_of(usize);
        let small = usize <= self.small_max;
        // arena_palloc: an aligned large request goes straight to large_malloc/large_palloc.
        if cache && (small || align <= 1) && self.cached(t, bin) {
            if let Some(item) = self.cache_pop(t, bin) {
                return Ok((item.arena, item.extent));
            }
            let arena = named.unwrap_or(self.thread(t).arena);
            if small {
                self.fill(n, t, bin, arena)?;
                let item = self.cache_pop(t, bin).expect("filled");
                return Ok((item.arena, item.extent));
            }
            // tcache_alloc_large: one object from the thread's arena, no fill.
            let extent = self.arena_mut(arena).place(n, usize)?;
            self.tick(t, arena, 1);
            return Ok((arena, extent));
        }
        // arena_malloc_hard compares the request with oversize_threshold, large_palloc (an
        // aligned request) its usable size: a 7.5 MiB malloc stays in the thread's arena.
        let huge_key = if align <= 1 { size } else { usize };
        let arena = match named {
            Some(a) => a,
            None if small => self.bound_arena(t)?,
            None => self.arena_for(t, huge_key)?,
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
        if th.bound {
            self.nthreads[arena as usize] -= 1;
            self.ithreads[th.iarena as usize] -= 1;
        }
        self.destroy_cache(t);
        self.threads[t] = None;
        self.refresh_totals();
    }
}
