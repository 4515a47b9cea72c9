//! The live process replay on the trace's clock (`replay --process --live --honour-clock`):
//! the child sleeps to each event's time (`CLOCK_MONOTONIC`, absolute, from the replay's
//! start) with the decay options in its `MALLOC_CONF`, and after every snapshot line prints a
//! decay line: `d ELAPSED_NS RESIDENT MAPPED RETAINED DIRTY MUZZY RTREE META...` (bytes; the
//! replayer's manual arena left out; per arena its metadata resident). Before the first event it prints `clock SINCE ...`:
//! ns since its constructor (about when jemalloc created arena 0 and started its decay
//! epoch), then the metadata before the first event ([`StartMeta`]: arena 0's and a fresh
//! arena's base, the radix tree), then the lowest worker stack's address, a heap address (a
//! table made before the workers started) and the bounds of the mapping that holds it
//! (`/proc/self/maps`; `0 0` when unreadable).
//!
//! The parent ([`live_clock_run`]) runs the child once and returns every checkpoint; the
//! comparison with the model over seeds is [`crate::check::decay_compare`].

use super::baton::monotonic_ns;
use super::process::{child_command, parse_header, parse_snapshot, ProcessAllocator};
use super::process_trace::ProcessInput;
use crate::analysis::TraceSource;
use crate::live::arena_mibs::{arena_mib, arena_mibs_of, read_bool_mib};
use crate::live::ctl::{mib, read_mib};
use crate::live::Api;
use crate::process::{ProcessOptions, ProcessSnapshot};
use crate::sizeclass::AllocatorConfig;
use crate::trace::Record;
use anyhow::{bail, ensure, Context, Result};
use std::io::Write;
use std::path::Path;

/// Sleeps until `CLOCK_MONOTONIC` reads `deadline_ns` (at once if it has passed).
pub(super) fn sleep_until(deadline_ns: u64) {
    if monotonic_ns() >= deadline_ns {
        return;
    }
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: an absolute sleep on a valid timespec; EINTR just returns early, and the loop
    // below sleeps again.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

/// The mapping (`/proc/self/maps` line) that contains `addr`, as `[start, end)`. Reads into
/// a buffer on the stack and parses in place: the child calls it between its metadata
/// measurement and the first event, where an allocation would change what was measured.
pub(super) fn mapping_containing(addr: u64) -> Option<(u64, u64)> {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 16 << 10];
    let (mut len, mut found) = (0usize, None);
    loop {
        // SAFETY: reads into the free tail of `buf`.
        let n = unsafe { libc::read(fd, buf[len..].as_mut_ptr().cast(), buf.len() - len) };
        if n <= 0 {
            break;
        }
        len += n as usize;
        // Whole lines are parsed; a partial last line moves to the front.
        let end = buf[..len]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        found = found.or_else(|| {
            buf[..end]
                .split(|&b| b == b'\n')
                .find_map(|l| span(l, addr))
        });
        if end == 0 && len == buf.len() {
            break; // a line longer than the buffer: not a mapping line worth reading
        }
        buf.copy_within(end..len, 0);
        len -= end;
    }
    // SAFETY: `fd` was opened above.
    unsafe { libc::close(fd) };
    found
}

/// `start-end ...` of a maps line, when it contains `addr`.
fn span(line: &[u8], addr: u64) -> Option<(u64, u64)> {
    let range = line.split(|&b| b == b' ').next()?;
    let mut it = range.split(|&b| b == b'-');
    let hex = |h: &[u8]| u64::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok();
    let (lo, hi) = (hex(it.next()?)?, hex(it.next()?)?);
    (lo <= addr && addr < hi).then_some((lo, hi))
}

/// MIBs of one arena's page statistics.
struct Pages {
    initialized: Vec<usize>,
    resident: Vec<usize>,
    mapped: Vec<usize>,
    retained: Vec<usize>,
    pactive: Vec<usize>,
    pdirty: Vec<usize>,
    pmuzzy: Vec<usize>,
}

fn pages_mibs(api: &Api, i: usize) -> Result<Pages> {
    let [initialized, resident, mapped, retained, pactive, pdirty, pmuzzy] = arena_mibs_of(
        api,
        i,
        [
            "arena.0.initialized",
            "stats.arenas.0.resident",
            "stats.arenas.0.mapped",
            "stats.arenas.0.retained",
            "stats.arenas.0.pactive",
            "stats.arenas.0.pdirty",
            "stats.arenas.0.pmuzzy",
        ],
    )?;
    Ok(Pages {
        initialized,
        resident,
        mapped,
        retained,
        pactive,
        pdirty,
        pmuzzy,
    })
}

/// Reads the decay line's statistics (after the snapshot's `epoch`).
pub(super) struct ClockReader {
    api: Api,
    page: u64,
    arenas: Vec<Pages>,
    /// `stats.metadata_rtree` (the radix tree's bytes, all in arena 0's base); 5.3.0 has
    /// none.
    rtree: Option<Vec<usize>>,
}

impl ClockReader {
    /// `manual` is the replayer's arena (left out); `narenas` the automatic ones (the huge
    /// arena, when on, is index `narenas`). [`ClockReader::header`] gives the clock line's
    /// metadata figures.
    pub fn new(api: &Api, manual: usize, narenas: u32) -> Result<ClockReader> {
        let arenas = (0..=narenas as usize)
            .filter(|&i| i != manual)
            .map(|i| pages_mibs(api, i))
            .collect::<Result<Vec<_>>>()?;
        Ok(ClockReader {
            api: *api,
            // SAFETY: arenas.page is a size_t.
            page: unsafe { api.read::<usize>("arenas.page")? } as u64,
            arenas,
            rtree: mib(api, "stats.metadata_rtree").ok(),
        })
    }

    fn read(&self, m: &[usize]) -> Result<u64> {
        read_mib(&self.api, m)
    }

    /// The metadata figures before the first event (see [`StartMeta`]); makes a fresh
    /// arena, kept idle, to read one.
    pub fn header(&self) -> Result<StartMeta> {
        // SAFETY: epoch takes a uint64_t; arenas.create returns an unsigned.
        let fresh = unsafe {
            self.api.write("epoch", 1u64)?;
            self.api.read::<u32>("arenas.create")?
        };
        // SAFETY: as above.
        unsafe { self.api.write("epoch", 1u64)? };
        let meta = |p: &Pages| -> Result<u64> {
            let pages = self.read(&p.pactive)? + self.read(&p.pdirty)?;
            Ok(self.read(&p.resident)?.saturating_sub(pages * self.page))
        };
        let base = |i: usize| self.read(&arena_mib(&self.api, "stats.arenas.0.base", i)?);
        let fresh_pages = pages_mibs(&self.api, fresh as usize)?;
        Ok(StartMeta {
            resident0: meta(&self.arenas[0])?,
            resident_fresh: meta(&fresh_pages)?,
            allocated0: base(0)?,
            allocated_fresh: base(fresh as usize)?,
            rtree: self.rtree.as_ref().map(|m| self.read(m)).transpose()?,
        })
    }

    /// The decay line (statistics as of the last `epoch`): the totals, the radix tree's
    /// bytes (`-` where the build has no such statistic), then each arena's metadata
    /// resident (`resident` less its active and dirty pages; 0 for an arena not made yet).
    pub(crate) fn write_line(&self, out: &mut impl Write, elapsed_ns: u64) -> Result<()> {
        let mut tot = [0u64; 5];
        let mut meta = String::new();
        for p in &self.arenas {
            if !read_bool_mib(&self.api, &p.initialized) {
                meta.push_str(" 0");
                continue;
            }
            let resident = self.read(&p.resident)?;
            let (active, dirty) = (self.read(&p.pactive)?, self.read(&p.pdirty)?);
            tot[0] += resident;
            tot[1] += self.read(&p.mapped)?;
            tot[2] += self.read(&p.retained)?;
            tot[3] += dirty * self.page;
            tot[4] += self.read(&p.pmuzzy)? * self.page;
            let m = resident.saturating_sub((active + dirty) * self.page);
            meta.push_str(&format!(" {m}"));
        }
        let rtree = match &self.rtree {
            Some(m) => self.read(m)?.to_string(),
            None => "-".to_string(),
        };
        writeln!(
            out,
            "d {elapsed_ns} {} {} {} {} {} {rtree}{meta}",
            tot[0], tot[1], tot[2], tot[3], tot[4]
        )?;
        Ok(())
    }
}

/// Metadata before the first event: arena 0's base (which holds the global tables and the
/// radix tree) and a freshly made arena's, as resident (`stats.arenas.<i>.resident` less
/// active and dirty pages) and allocated (`stats.arenas.<i>.base`) bytes, and the radix
/// tree's bytes (`stats.metadata_rtree`; `None` on 5.3.0, which has no such statistic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StartMeta {
    pub resident0: u64,
    pub resident_fresh: u64,
    pub allocated0: u64,
    pub allocated_fresh: u64,
    pub rtree: Option<u64>,
}

impl StartMeta {
    /// The clock line's fields.
    pub fn to_line(self) -> String {
        let rtree = self.rtree.map_or("-".to_string(), |r| r.to_string());
        format!(
            "{} {} {} {} {rtree}",
            self.resident0, self.resident_fresh, self.allocated0, self.allocated_fresh
        )
    }
}

/// One decay line.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveDecay {
    pub elapsed_ns: u64,
    pub resident_bytes: u64,
    pub mapped_bytes: u64,
    pub retained_bytes: u64,
    pub dirty_bytes: u64,
    pub muzzy_bytes: u64,
    /// `stats.metadata_rtree` (`None` on a build without it, 5.3.0).
    pub rtree_bytes: Option<u64>,
    /// Each automatic arena's metadata resident (then the huge arena's, when on).
    pub arena_metadata: Vec<u64>,
}

fn parse_decay(line: &str) -> Result<LiveDecay> {
    let bad = || anyhow::anyhow!("bad decay line from the child: '{line}'");
    let t: Vec<&str> = line
        .strip_prefix("d ")
        .ok_or_else(bad)?
        .split(' ')
        .collect();
    ensure!(t.len() >= 6, bad());
    let num = |s: &str| s.parse::<u64>().context("bad number from the child");
    let v = t[..5].iter().map(|s| num(s)).collect::<Result<Vec<_>>>()?;
    Ok(LiveDecay {
        elapsed_ns: v[0],
        resident_bytes: v[1],
        mapped_bytes: v[2],
        retained_bytes: v[3],
        dirty_bytes: v[4],
        muzzy_bytes: num(t[5])?,
        rtree_bytes: t
            .get(6)
            .filter(|s| **s != "-")
            .map(|s| num(s))
            .transpose()?,
        arena_metadata: t.iter().skip(7).map(|s| num(s)).collect::<Result<_>>()?,
    })
}

/// One live run on the trace's clock.
#[derive(Clone, Debug)]
pub struct LiveClockRun {
    pub config: AllocatorConfig,
    pub narenas: u32,
    /// Large bytes start-up left live in arena 0 (the model's `replayer_start`).
    pub residue: u64,
    /// ns between the child's constructor (arena 0's creation) and the first event.
    pub start_ns: u64,
    /// Arena 0's metadata resident before the first event, and a fresh arena's.
    pub metadata0: u64,
    pub metadata_fresh: u64,
    /// Everything the clock line reported of the metadata.
    pub start_meta: StartMeta,
    /// The lowest worker stack's address and the address of a table made before the
    /// workers (the model's address space: see [`crate::process::Metadata`]).
    pub below: u64,
    pub heap: u64,
    /// The mapping holding `heap` (`[start, end)`; `(0, 0)`: unknown).
    pub heap_mapping: (u64, u64),
    /// At every checkpoint: the snapshot (active bytes per arena) and the decay line.
    pub checkpoints: Vec<(ProcessSnapshot, LiveDecay)>,
}

/// A record's time stamp, if it has one.
pub(super) fn stamp(r: &Record) -> Option<u64> {
    r.time_ns()
}

/// Why a trace without times cannot replay on its clock.
pub(super) const NO_TIMES: &str =
    "the trace has no times: --honour-clock replays on the trace's clock (record with times)";

/// Each record's time in ns from the first time stamp (a record without one keeps the
/// previous record's; times never go back). An error when the trace has no times.
pub(crate) fn relative_times(records: &[Record]) -> Result<Vec<u64>> {
    let first = records.iter().find_map(stamp).context(NO_TIMES)?;
    let mut last = 0u64;
    Ok(records
        .iter()
        .filter(|r| !matches!(r, Record::Site { .. }))
        .map(|r| {
            if let Some(t) = stamp(r) {
                last = last.max(t.saturating_sub(first));
            }
            last
        })
        .collect())
}

/// Runs the child once on the trace's clock, reading a checkpoint every `every` events.
pub fn live_clock_run(
    exe: &Path,
    allocator: &ProcessAllocator,
    trace: TraceSource<'_>,
    options: &ProcessOptions,
    every: u64,
) -> Result<LiveClockRun> {
    // The child computes the same times from the records it reads (`relative_times`); a
    // trace without any is refused here, before it starts.
    let first = trace.replay_records()?.find_map(|r| match r {
        Ok(r) => stamp(&r).map(|_| Ok(())),
        Err(e) => Some(Err(e)),
    });
    match first {
        Some(read) => read?,
        None => bail!(NO_TIMES),
    }
    let input = trace.child_args()?;
    let mut command = child_command(exe, allocator, options)?;
    command.args(["--every", &every.max(1).to_string(), "--on-clock"]);
    input.add_to(&mut command);
    let child = super::process::spawn_piped(exe, &mut command)?;
    let output = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let all: Vec<&str> = text.lines().collect();
    if let Some(e) = all.iter().find_map(|l| l.strip_prefix("error ")) {
        bail!("live process replay: {e}");
    }
    ensure!(
        output.status.success() && all.len() >= 4,
        "the live process child failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    let header = parse_header(all[0], all[1], all[2])?;
    let clock: Vec<&str> = all[3]
        .strip_prefix("clock ")
        .with_context(|| format!("bad clock line '{}'", all[3]))?
        .split(' ')
        .collect();
    let bad = || anyhow::anyhow!("bad clock line '{}'", all[3]);
    let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
    ensure!(clock.len() == 10, bad());
    let start_ns = num(clock[0])?;
    let start_meta = StartMeta {
        resident0: num(clock[1])?,
        resident_fresh: num(clock[2])?,
        allocated0: num(clock[3])?,
        allocated_fresh: num(clock[4])?,
        rtree: (clock[5] != "-").then(|| num(clock[5])).transpose()?,
    };
    let (below, heap) = (num(clock[6])?, num(clock[7])?);
    let heap_mapping = (num(clock[8])?, num(clock[9])?);
    let mut checkpoints = Vec::new();
    for pair in all[4..].chunks(2) {
        let [s, d] = pair else {
            bail!("the live child's output ends in the middle of a checkpoint")
        };
        checkpoints.push((parse_snapshot(s)?, parse_decay(d)?));
    }
    Ok(LiveClockRun {
        config: header.config,
        narenas: header.narenas,
        residue: header.residue.large,
        start_ns,
        metadata0: start_meta.resident0,
        metadata_fresh: start_meta.resident_fresh,
        start_meta,
        below,
        heap,
        heap_mapping,
        checkpoints,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A maps line (the format of proc(5)): its range when it holds the address, else none.
    #[test]
    fn a_maps_line_gives_its_range() {
        let line = b"7fa3f7200000-7fa3f8e00000 rw-p 00000000 00:00 0 ";
        assert_eq!(
            span(line, 0x7fa3_f820_0080),
            Some((0x7fa3_f720_0000, 0x7fa3_f8e0_0000))
        );
        assert_eq!(span(line, 0x7fa3_f8e0_0000), None, "the end is excluded");
        assert_eq!(span(b"garbage", 1), None);
    }

    /// This process's own stack variable lies in one mapping, which holds it; a page at
    /// address 0 lies in none (Linux's mmap_min_addr).
    #[test]
    fn the_mapping_of_a_stack_address() {
        let x = 0u64;
        let a = &x as *const u64 as u64;
        let (lo, hi) = mapping_containing(a).expect("the stack is mapped");
        assert!(lo <= a && a < hi && lo % 4096 == 0 && hi % 4096 == 0);
        assert_eq!(mapping_containing(0), None);
    }
}
