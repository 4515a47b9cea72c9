//! The child side of the live process replay (`fragsim __process-live-child`): the
//! start-up constructor that moves the main thread to a manual arena, one raw pthread per
//! trace thread driven in trace order by the baton ([`crate::live::relay`]), and the statistics
//! reader.
//! See [`crate::check::process`] for why it is built this way.

use super::baton_ops::{scan, ProcessWork, Window};
use super::process_line::write_snapshot;
use super::process_trace::ProcessInput;
use crate::analysis::TraceSource;
use crate::live::arena_mibs::{arena_mib, arena_mibs_of, read_bool_mib};
use crate::live::ctl::{mib, read_mib};
use crate::live::relay::Baton;
use crate::live::Api;
use crate::process::{ArenaSnapshot, DumpAt, ProcessSnapshot};
use crate::sim::BinStats;
use crate::trace::{Record, TraceError};
use anyhow::{ensure, Result};
use std::ffi::c_void;
use std::io::Write;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// Set by the constructor: the manual arena's index + 1 (0: not run), or a negative error.
static MANUAL_ARENA: AtomicI32 = AtomicI32::new(0);
/// `CLOCK_MONOTONIC` at the constructor's start (about when jemalloc made arena 0 and its
/// decay epoch): the clock-honouring replay reports its start against it.
pub(super) static CONSTRUCTOR_NS: AtomicU64 = AtomicU64::new(0);

/// `CLOCK_MONOTONIC` now, in ns.
pub(super) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

extern "C" fn child_constructor() {
    // SAFETY: getenv and the ctls take NUL-terminated names; nothing here allocates in Rust.
    unsafe {
        let which = libc::getenv(c"FRAGSIM_PROCESS_CHILD".as_ptr());
        if which.is_null() {
            return;
        }
        CONSTRUCTOR_NS.store(monotonic_ns(), Ordering::SeqCst);
        let mallctl: crate::live::ctl::MallctlFn = if *which == b's' as libc::c_char {
            let p = libc::dlsym(libc::RTLD_DEFAULT, c"mallctl".as_ptr());
            if p.is_null() {
                MANUAL_ARENA.store(-1, Ordering::SeqCst);
                return;
            }
            std::mem::transmute::<*mut c_void, crate::live::ctl::MallctlFn>(p)
        } else {
            tikv_jemalloc_sys::mallctl
        };
        let mut arena: u32 = 0;
        let mut len = std::mem::size_of::<u32>();
        let null = std::ptr::null_mut();
        super::baton_meta::before_create(mallctl);
        if mallctl(
            c"arenas.create".as_ptr(),
            (&mut arena as *mut u32).cast(),
            &mut len,
            null,
            0,
        ) != 0
        {
            MANUAL_ARENA.store(-2, Ordering::SeqCst);
            return;
        }
        super::baton_meta::read_fresh(mallctl, arena);
        let mut off = false;
        if mallctl(
            c"thread.tcache.enabled".as_ptr(),
            null,
            std::ptr::null_mut(),
            (&mut off as *mut bool).cast(),
            1,
        ) != 0
        {
            MANUAL_ARENA.store(-3, Ordering::SeqCst);
            return;
        }
        if mallctl(
            c"thread.arena".as_ptr(),
            null,
            std::ptr::null_mut(),
            (&mut arena as *mut u32).cast(),
            4,
        ) != 0
        {
            MANUAL_ARENA.store(-4, Ordering::SeqCst);
            return;
        }
        MANUAL_ARENA.store(arena as i32 + 1, Ordering::SeqCst);
    }
}

/// The manual arena the start-up constructor moved the main thread to (`None`: it did not
/// run, `FRAGSIM_PROCESS_CHILD` unset, or it failed). The measuring child asks too.
pub fn manual_arena() -> Option<u32> {
    let v = MANUAL_ARENA.load(Ordering::SeqCst);
    (v > 0).then(|| (v - 1) as u32)
}

#[used]
#[link_section = ".init_array"]
static CHILD_CONSTRUCTOR: extern "C" fn() = child_constructor;

/// The MIBs of one arena's statistics.
struct ArenaMibs {
    initialized: Vec<usize>,
    small: Vec<usize>,
    large: Vec<usize>,
    pactive: Vec<usize>,
    tcache: Vec<usize>,
    mapped: Vec<usize>,
    retained: Vec<usize>,
    /// `base`, `internal`, `resident`: read for the manual arena only (left out of the
    /// totals).
    own: [Vec<usize>; 3],
    bins: Vec<[Vec<usize>; 3]>,
}

fn arena_mibs(api: &Api, i: usize, nbins: usize) -> Result<ArenaMibs> {
    let bins = (0..nbins)
        .map(|j| {
            let f = |field: &str| -> Result<Vec<usize>> {
                let mut m = arena_mib(api, &format!("stats.arenas.0.bins.0.{field}"), i)?;
                m[4] = j;
                Ok(m)
            };
            Ok([f("curregs")?, f("curslabs")?, f("nonfull_slabs")?])
        })
        .collect::<Result<Vec<_>>>()?;
    let [initialized, small, large, pactive, tcache, mapped, retained] = arena_mibs_of(
        api,
        i,
        [
            "arena.0.initialized",
            "stats.arenas.0.small.allocated",
            "stats.arenas.0.large.allocated",
            "stats.arenas.0.pactive",
            "stats.arenas.0.tcache_bytes",
            "stats.arenas.0.mapped",
            "stats.arenas.0.retained",
        ],
    )?;
    let own = arena_mibs_of(
        api,
        i,
        [
            "stats.arenas.0.base",
            "stats.arenas.0.internal",
            "stats.arenas.0.resident",
        ],
    )?;
    Ok(ArenaMibs {
        own,
        initialized,
        small,
        large,
        pactive,
        tcache,
        mapped,
        retained,
        bins,
    })
}

struct Reader {
    api: Api,
    epoch: Vec<usize>,
    allocated: Vec<usize>,
    active: Vec<usize>,
    /// `stats.metadata`, `stats.resident`, `stats.mapped`.
    totals: [Vec<usize>; 3],
    arenas: Vec<(u32, ArenaMibs)>,
    manual: ArenaMibs,
    page: u64,
}

impl Reader {
    fn arena(&self, i: u32, m: &ArenaMibs) -> Result<ArenaSnapshot> {
        let api = &self.api;
        Ok(ArenaSnapshot {
            index: i,
            allocated_bytes: read_mib(api, &m.small)? + read_mib(api, &m.large)?,
            active_bytes: read_mib(api, &m.pactive)? * self.page,
            tcache_bytes: read_mib(api, &m.tcache)?,
            mapped_bytes: read_mib(api, &m.mapped)?,
            retained_bytes: read_mib(api, &m.retained)?,
            bins: m
                .bins
                .iter()
                .map(|[r, s, n]| {
                    Ok(BinStats {
                        curregs: read_mib(api, r)?,
                        curslabs: read_mib(api, s)?,
                        nonfull_slabs: read_mib(api, n)?,
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        })
    }

    fn snapshot(&self, event: u64) -> Result<ProcessSnapshot> {
        let mut one: u64 = 1;
        // SAFETY: writing epoch takes a uint64_t.
        let err = unsafe {
            (self.api.bymib)(
                self.epoch.as_ptr(),
                self.epoch.len(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                (&mut one as *mut u64).cast(),
                8,
            )
        };
        ensure!(err == 0, "mallctl epoch: error {err}");
        let manual = self.arena(0, &self.manual)?;
        let api = &self.api;
        let own = self.manual.own.each_ref().map(|m| read_mib(api, m));
        let totals = self.totals.each_ref().map(|m| read_mib(api, m));
        let [base, internal, resident] = own;
        let [metadata, all_resident, mapped] = totals;
        let mut s = ProcessSnapshot {
            event,
            allocated_bytes: read_mib(api, &self.allocated)? - manual.allocated_bytes,
            active_bytes: read_mib(api, &self.active)? - manual.active_bytes,
            metadata_bytes: metadata? - base? - internal?,
            resident_bytes: all_resident? - resident?,
            mapped_bytes: mapped? - manual.mapped_bytes,
            arenas: Vec::new(),
        };
        for (i, m) in &self.arenas {
            if read_bool_mib(&self.api, &m.initialized) {
                s.arenas.push(self.arena(*i, m)?);
            }
        }
        Ok(s)
    }
}

/// The child's side: replays `trace` on one pthread per trace thread and prints a header
/// (the build as JSON, then `narenas N`, then `baseline`) and a snapshot every `every` events.
/// `on_clock`: each call waits for its time (from the first) and every snapshot line is
/// followed by a decay line (`crate::check::clocked_child`). The trace is read twice as a stream (a
/// scan, then the replay a window at a time: `check/baton_ops.rs`), never held.
pub fn serve_process_child(
    trace: TraceSource<'_>,
    every: u64,
    api: Api,
    on_clock: bool,
    dump: Option<DumpAt>,
    out: &mut impl Write,
) -> Result<()> {
    let manual = MANUAL_ARENA.load(Ordering::SeqCst);
    ensure!(manual > 0, "the child's start-up did not move its main thread to a manual arena (code {manual}): is FRAGSIM_PROCESS_CHILD set?");
    let manual = (manual - 1) as usize;
    let config = api.config()?;
    // SAFETY: documented types (unsigned, size_t).
    let (narenas, nbins, oversize) = unsafe {
        (
            api.read::<u32>("opt.narenas")?,
            api.read::<u32>("arenas.nbins")? as usize,
            api.read::<usize>("opt.oversize_threshold")? as u64,
        )
    };
    writeln!(out, "{}", serde_json::to_string(&config)?)?;
    writeln!(out, "narenas {narenas} oversize {oversize}")?;
    write_baseline(
        &api,
        (manual != narenas as usize).then_some(narenas as usize),
        out,
    )?;
    // Before any worker thread exists: the probe forks.
    let capacity = match on_clock {
        false => super::baton_meta::b0_record_capacity(&api),
        true => None,
    };
    let scan = scan(trace.replay_records()?)?;
    ensure!(!on_clock || scan.timed, super::clocked_child::NO_TIMES);
    let reader = Reader::new(api, manual, narenas, nbins, config.page())?;
    // Everything the replay uses is made here, before the workers start.
    let work = ProcessWork::new(api, scan.ids)?;
    let mut window = Window::new(&scan, narenas);
    let records = trace.replay_records()?;
    let clock = match on_clock {
        true => Some(super::clocked_child::ClockReader::new(
            &api, manual, narenas,
        )?),
        false => None,
    };
    let mut baton = Baton::start(&work, scan.threads)?;
    let replay = Replay {
        every: every.max(1),
        reader: &reader,
        clock,
        capacity,
        dump,
    };
    replay.run(&mut baton, &work, &mut window, records, out)
}

/// What start-up left live (the model starts from it): `baseline LARGE SMALL HUGE`, arena 0's
/// large and small bytes and the huge arena's large bytes (start-up's blocks at or above a
/// low `oversize_threshold` go there: libstdc++'s 72,704-byte pool under 64 KiB).
/// `huge`: the huge arena's index (`None` without one: the manual arena takes its index).
fn write_baseline(api: &Api, huge: Option<usize>, out: &mut impl Write) -> Result<()> {
    let a0 = arena_mibs(api, 0, 0)?;
    // SAFETY: writing epoch takes a uint64_t.
    unsafe { api.write("epoch", 1u64)? };
    let huge = match huge.map(|h| arena_mibs(api, h, 0)).transpose()? {
        Some(h) if read_bool_mib(api, &h.initialized) => read_mib(api, &h.large)?,
        _ => 0,
    };
    writeln!(
        out,
        "baseline {} {} {huge}",
        read_mib(api, &a0.large)?,
        read_mib(api, &a0.small)?
    )?;
    Ok(())
}

impl Reader {
    /// The automatic arenas and the huge one (index `narenas`); without a huge arena the
    /// manual one takes index `narenas`: skipped.
    fn new(api: Api, manual: usize, narenas: u32, nbins: usize, page: u64) -> Result<Self> {
        let arenas = (0..=narenas)
            .filter(|&i| i as usize != manual)
            .map(|i| Ok((i, arena_mibs(&api, i as usize, nbins)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Reader {
            api,
            epoch: mib(&api, "epoch")?,
            allocated: mib(&api, "stats.allocated")?,
            active: mib(&api, "stats.active")?,
            totals: [
                mib(&api, "stats.metadata")?,
                mib(&api, "stats.resident")?,
                mib(&api, "stats.mapped")?,
            ],
            arenas,
            manual: arena_mibs(&api, manual, nbins)?,
            page,
        })
    }
}

/// How the replay reports: a snapshot line every `every` calls and after the last, and with
/// the clock a decay line after each (and each call at its time).
struct Replay<'r> {
    every: u64,
    reader: &'r Reader,
    clock: Option<super::clocked_child::ClockReader>,
    /// Arena 0's base's record capacity before the first event (the `meta` line).
    capacity: Option<u64>,
    /// When to print jemalloc's own statistics dump (a `j JSON` line, before the snapshot
    /// of the same event).
    dump: Option<DumpAt>,
}

impl Replay<'_> {
    /// Runs the trace window by window on the baton (one call at a time at its time on the
    /// clock), a window never crossing a snapshot.
    fn run(
        &self,
        baton: &mut Baton<'_, ProcessWork>,
        work: &ProcessWork,
        window: &mut Window,
        mut records: impl Iterator<Item = Result<Record, TraceError>>,
        out: &mut impl Write,
    ) -> Result<()> {
        let start = self.clock_line(baton, work, out)?;
        let every = self.every;
        let mut done = 0u64;
        loop {
            let mut limit = every - done % every;
            // A window never crosses the dump's event either.
            if let Some(DumpAt::Event(at)) = self.dump {
                if done < at {
                    limit = limit.min(at - done);
                }
            }
            let n = window.fill(work, &mut records, limit)?;
            if n == 0 {
                break;
            }
            let steps = &window.steps;
            let step = |k: usize| steps[k];
            let ran = match &self.clock {
                // On the trace's clock: one call at a time, each at its time.
                Some(_) => (0..n).try_for_each(|k| {
                    super::clocked_child::sleep_until(start + window.times[k]);
                    baton.run_span(k, k + 1, step)
                }),
                None => baton.run_span(0, n, step),
            };
            if let Err(failed) = ran {
                let event = done + failed as u64 + 1;
                writeln!(out, "error event {event}: the allocation failed")?;
                out.flush()?;
                return Ok(());
            }
            done += n as u64;
            if self.dump == Some(DumpAt::Event(done)) {
                self.dump_line(out)?;
            }
            if done.is_multiple_of(every) {
                self.checkpoint(done, start, out)?;
            }
        }
        if !done.is_multiple_of(every) {
            self.checkpoint(done, start, out)?;
        }
        if self.dump == Some(DumpAt::End) {
            self.dump_line(out)?;
        }
        out.flush()?;
        Ok(())
    }

    /// jemalloc's own JSON statistics dump, as a `j JSON` line.
    fn dump_line(&self, out: &mut impl Write) -> Result<()> {
        writeln!(out, "j {}", self.reader.api.stats_print_json())?;
        Ok(())
    }

    /// On the clock, the `clock` line before the first call; the replay's start.
    fn clock_line(
        &self,
        baton: &Baton<'_, ProcessWork>,
        work: &ProcessWork,
        out: &mut impl Write,
    ) -> Result<u64> {
        let meta = match &self.clock {
            Some(c) => Some(c.header()?),
            None => {
                // Where the model's mappings go, as on the clock (below).
                let at = (baton.lowest_stack().unwrap_or(0), work.table_address());
                let (api, page) = (&self.reader.api, self.reader.page);
                super::baton_meta::write_meta(api, page, at, self.capacity, out)?;
                None
            }
        };
        let start = monotonic_ns();
        if let Some(meta) = meta {
            let since = start.saturating_sub(CONSTRUCTOR_NS.load(Ordering::SeqCst));
            // Where the model places the trace's mappings: below the workers' stacks, and the
            // heap made before them (the replayer's tables, in the leaf of the radix tree that
            // start-up registered).
            let below = baton.lowest_stack().unwrap_or(0);
            let heap = work.table_address();
            // The mapping that holds it: start-up's extents, whose radix-tree leaves exist.
            let (lo, hi) = super::clocked_child::mapping_containing(heap).unwrap_or((0, 0));
            writeln!(
                out,
                "clock {since} {} {below} {heap} {lo} {hi}",
                meta.to_line()
            )?;
        }
        Ok(start)
    }

    /// The snapshot line after `done` calls (and the decay line on the clock).
    fn checkpoint(&self, done: u64, start: u64, out: &mut impl Write) -> Result<()> {
        write_snapshot(out, &self.reader.snapshot(done)?)?;
        if let Some(c) = &self.clock {
            c.write_line(out, monotonic_ns() - start)?;
        }
        Ok(())
    }
}
