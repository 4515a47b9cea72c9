//! The live process replay on the trace's clock (`replay --process --live --honour-clock`):
//! the child sleeps to each event's time (`CLOCK_MONOTONIC`, absolute, from the replay's
//! start) with the decay options in its `MALLOC_CONF`, and after every snapshot line prints a
//! decay line: `d ELAPSED_NS RESIDENT MAPPED RETAINED DIRTY MUZZY` (bytes; the replayer's
//! manual arena subtracted). Before the first event it prints `clock SINCE META0 META_FRESH`:
//! ns since its constructor (about when jemalloc created arena 0 and started its decay
//! epoch), arena 0's metadata resident (`stats.arenas.0.resident` less its active and dirty
//! pages) and a freshly created arena's (a second manual arena made for the purpose).
//!
//! The parent ([`live_clock_run`]) runs the child once and returns every checkpoint; the
//! comparison with the model over seeds is [`crate::live::decay_compare`].

use super::arena_replay::{mib, read_mib, Api};
use super::baton::monotonic_ns;
use super::process::{child_command, parse_header, parse_snapshot, ProcessAllocator, ProcessTrace};
use crate::process::{ProcessOptions, ProcessSnapshot};
use crate::sizeclass::AllocatorConfig;
use crate::trace::Record;
use anyhow::{bail, ensure, Context, Result};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

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
    let at = |name: &str, pos: usize| -> Result<Vec<usize>> {
        let mut m = mib(api, name)?;
        m[pos] = i;
        Ok(m)
    };
    Ok(Pages {
        initialized: at("arena.0.initialized", 1)?,
        resident: at("stats.arenas.0.resident", 2)?,
        mapped: at("stats.arenas.0.mapped", 2)?,
        retained: at("stats.arenas.0.retained", 2)?,
        pactive: at("stats.arenas.0.pactive", 2)?,
        pdirty: at("stats.arenas.0.pdirty", 2)?,
        pmuzzy: at("stats.arenas.0.pmuzzy", 2)?,
    })
}

/// Reads the decay line's statistics (after the snapshot's `epoch`).
pub(super) struct ClockReader {
    api: Api,
    page: u64,
    arenas: Vec<Pages>,
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
        })
    }

    fn read(&self, m: &[usize]) -> Result<u64> {
        read_mib(&self.api, m)
    }

    /// Arena 0's metadata resident now, and a fresh arena's (one made here, kept idle).
    pub fn header(&self) -> Result<(u64, u64)> {
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
        let fresh = pages_mibs(&self.api, fresh as usize)?;
        Ok((meta(&self.arenas[0])?, meta(&fresh)?))
    }

    /// The decay line (statistics as of the last `epoch`).
    pub fn write_line(&self, out: &mut impl Write, elapsed_ns: u64) -> Result<()> {
        let mut tot = [0u64; 5];
        for p in &self.arenas {
            let mut v = false;
            let mut len = 1usize;
            // SAFETY: arena.<i>.initialized is a bool.
            let err = unsafe {
                (self.api.bymib)(
                    p.initialized.as_ptr(),
                    p.initialized.len(),
                    (&mut v as *mut bool).cast(),
                    &mut len,
                    std::ptr::null_mut(),
                    0,
                )
            };
            if err != 0 || !v {
                continue;
            }
            tot[0] += self.read(&p.resident)?;
            tot[1] += self.read(&p.mapped)?;
            tot[2] += self.read(&p.retained)?;
            tot[3] += self.read(&p.pdirty)? * self.page;
            tot[4] += self.read(&p.pmuzzy)? * self.page;
        }
        writeln!(
            out,
            "d {elapsed_ns} {} {} {} {} {}",
            tot[0], tot[1], tot[2], tot[3], tot[4]
        )?;
        Ok(())
    }
}

/// One decay line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveDecay {
    pub elapsed_ns: u64,
    pub resident_bytes: u64,
    pub mapped_bytes: u64,
    pub retained_bytes: u64,
    pub dirty_bytes: u64,
    pub muzzy_bytes: u64,
}

fn parse_decay(line: &str) -> Result<LiveDecay> {
    let v: Vec<u64> = line
        .strip_prefix("d ")
        .with_context(|| format!("bad decay line from the child: '{line}'"))?
        .split(' ')
        .map(|t| t.parse::<u64>().context("bad number from the child"))
        .collect::<Result<_>>()?;
    let [elapsed_ns, resident_bytes, mapped_bytes, retained_bytes, dirty_bytes, muzzy_bytes] =
        v[..]
    else {
        bail!("bad decay line from the child: '{line}'")
    };
    Ok(LiveDecay {
        elapsed_ns,
        resident_bytes,
        mapped_bytes,
        retained_bytes,
        dirty_bytes,
        muzzy_bytes,
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
    /// At every checkpoint: the snapshot (active bytes per arena) and the decay line.
    pub checkpoints: Vec<(ProcessSnapshot, LiveDecay)>,
}

/// Each record's time in ns from the first time stamp (a record without one keeps the
/// previous record's; times never go back). An error when the trace has no times.
pub fn relative_times(records: &[Record]) -> Result<Vec<u64>> {
    let stamp = |r: &Record| match r {
        Record::Call(c) => c.time_ns,
        Record::ThreadExit { time_ns, .. } => *time_ns,
        Record::Site { .. } => None,
    };
    let first = records.iter().find_map(stamp).context(
        "the trace has no times: --honour-clock replays on the trace's clock (record with times)",
    )?;
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
    trace: ProcessTrace<'_>,
    options: &ProcessOptions,
    every: u64,
) -> Result<LiveClockRun> {
    // The child computes the same times from the records it reads (`relative_times`).
    relative_times(trace.records())?;
    let input = trace.child_args()?;
    let mut command = child_command(exe, allocator, options)?;
    command.args(["--every", &every.max(1).to_string(), "--on-clock"]);
    input.add_to(&mut command);
    // Stopped with the parent if the run is interrupted (Ctrl-C).
    let child = crate::cleanup::GuardedChild::spawn(
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .with_context(|| format!("cannot start '{}'", exe.display()))?;
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
    let clock: Vec<u64> = all[3]
        .strip_prefix("clock ")
        .with_context(|| format!("bad clock line '{}'", all[3]))?
        .split(' ')
        .filter_map(|n| n.parse().ok())
        .collect();
    let [start_ns, metadata0, metadata_fresh] = clock[..] else {
        bail!("bad clock line '{}'", all[3])
    };
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
        residue: header.residue,
        start_ns,
        metadata0,
        metadata_fresh,
        checkpoints,
    })
}
