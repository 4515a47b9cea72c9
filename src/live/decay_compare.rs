//! The decay model against the real allocator on the trace's clock: N live runs (each a
//! fresh child, [`super::decay::live_clock_run`]) and N model runs (seeds `seed..seed+N`),
//! compared at every checkpoint: the real runs' mean and min-max of resident, the model's
//! mean over seeds, and its error against the real mean beside the real spread.

use super::decay::{live_clock_run, LiveClockRun};
use super::process::{ProcessAllocator, ProcessTrace};
use super::replayed_clock::{replayed_times, restamp, Reported};
use crate::process::{machine_coarse_clock_ns, DecayClock, Metadata, Process, ProcessOptions};
use crate::sizeclass::JemallocVersion;
use crate::trace::Record;
use anyhow::{ensure, Result};
use std::path::Path;

/// One checkpoint: the model's mean over seeds and the live runs' mean, min and max.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ClockCheckpoint {
    pub event: u64,
    /// The trace's time at the event, ns from the first record.
    pub time_ns: u64,
    pub model_active: f64,
    pub real_active: Band,
    pub model_resident: f64,
    pub real_resident: Band,
    pub model_dirty: f64,
    pub real_dirty: Band,
    pub model_muzzy: f64,
    pub real_muzzy: Band,
    pub model_retained: f64,
    pub real_retained: Band,
    /// Metadata resident: the model's constant and the real `resident - active - dirty`.
    pub model_metadata: f64,
    pub real_metadata: Band,
}

/// Mean, min and max over runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Band {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Band {
    fn of(v: impl Iterator<Item = f64>) -> Band {
        let (mut n, mut sum, mut min, mut max) = (0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY);
        for x in v {
            n += 1.0;
            sum += x;
            min = min.min(x);
            max = max.max(x);
        }
        Band {
            mean: if n > 0.0 { sum / n } else { 0.0 },
            min,
            max,
        }
    }

    pub fn spread(&self) -> f64 {
        self.max - self.min
    }
}

/// The whole comparison.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClockComparison {
    pub version: String,
    pub narenas: u32,
    pub runs: usize,
    pub events: u64,
    /// `CLOCK_MONOTONIC_COARSE`'s resolution the model read its clock through.
    pub clock_resolution_ns: u64,
    /// The model read the clock the live replay kept (5.3.1's clock-driven cache GC), rather
    /// than the trace's own times.
    pub replayed_clock: bool,
    /// Metadata resident before the first event, mean over runs: arena 0's and a fresh
    /// arena's (the model's constants, see [`crate::process::Metadata`]).
    pub metadata0: f64,
    pub metadata_fresh: f64,
    pub checkpoints: Vec<ClockCheckpoint>,
}

/// Error figures over checkpoints of one statistic (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ErrorSummary {
    /// Mean and max over checkpoints of |model mean - real mean|.
    pub mean_error: f64,
    pub max_error: f64,
    /// The same, relative to the real mean at each checkpoint (checkpoints with a real mean
    /// of 0 are left out).
    pub mean_relative_error: f64,
    pub max_relative_error: f64,
    /// Mean and max over checkpoints of the live runs' max - min.
    pub mean_spread: f64,
    pub max_spread: f64,
    /// Checkpoints where the model's mean lies within the live runs' min-max.
    pub within_band: usize,
    pub checkpoints: usize,
}

impl ClockComparison {
    /// Errors of one statistic, chosen by `f` as (model, real band).
    pub fn errors(&self, f: impl Fn(&ClockCheckpoint) -> (f64, Band)) -> ErrorSummary {
        let mut e = ErrorSummary {
            checkpoints: self.checkpoints.len(),
            ..ErrorSummary::default()
        };
        let mut nrel = 0.0;
        for c in &self.checkpoints {
            let (m, b) = f(c);
            let err = (m - b.mean).abs();
            e.mean_error += err;
            e.max_error = e.max_error.max(err);
            if b.mean > 0.0 {
                let rel = err / b.mean;
                e.mean_relative_error += rel;
                e.max_relative_error = e.max_relative_error.max(rel);
                nrel += 1.0;
            }
            e.mean_spread += b.spread();
            e.max_spread = e.max_spread.max(b.spread());
            if m >= b.min - 0.5 && m <= b.max + 0.5 {
                e.within_band += 1;
            }
        }
        let n = self.checkpoints.len().max(1) as f64;
        e.mean_error /= n;
        e.mean_spread /= n;
        if nrel > 0.0 {
            e.mean_relative_error /= nrel;
        }
        e
    }

    pub fn resident(&self) -> ErrorSummary {
        self.errors(|c| (c.model_resident, c.real_resident))
    }

    pub fn active(&self) -> ErrorSummary {
        self.errors(|c| (c.model_active, c.real_active))
    }
}

/// The model's statistics at each checkpoint of one run.
type ModelPoint = [f64; 6];

fn model_run(
    live: &LiveClockRun,
    records: &[Record],
    options: &ProcessOptions,
    seed: u64,
    resolution_ns: u64,
    at: &[u64],
) -> Result<Vec<ModelPoint>> {
    let mut o = options.clone();
    o.narenas = Some(live.narenas);
    // The cache GC the child runs (`ProcessOptions::to_conf`): 5.3.1's clock-driven one only
    // when asked for, modelled on the trace's clock (`process/model/gc.rs`).
    o.experimental_tcache_gc = Some(options.experimental_tcache_gc.unwrap_or(false));
    let mut model = Process::new(live.config, o, 1)?;
    model.set_decay_clock(DecayClock {
        seed,
        resolution_ns,
        start_ns: live.start_ns,
    });
    let sm = live.start_meta;
    model.set_metadata(Metadata {
        base_bytes: sm.resident0,
        per_arena_bytes: sm.resident_fresh,
        base_allocated: sm.allocated0,
        per_arena_allocated: sm.allocated_fresh,
        rtree_bytes: sm.rtree.unwrap_or(0),
        below: live.below,
        heap: live.heap,
        heap_mapping: live.heap_mapping,
    });
    model.replayer_start(live.residue)?;
    let mut out = Vec::with_capacity(at.len());
    let mut next = at.iter().peekable();
    let calls = records.iter().filter(|r| !matches!(r, Record::Site { .. }));
    for (i, r) in calls.enumerate() {
        model.apply(r)?;
        if next.peek() == Some(&&(i as u64 + 1)) {
            next.next();
            let s = model.stats();
            out.push([
                s.active_bytes as f64,
                s.resident_bytes as f64,
                s.dirty_bytes as f64,
                s.muzzy_bytes as f64,
                s.retained_bytes as f64,
                s.metadata_bytes as f64,
            ]);
        }
    }
    Ok(out)
}

/// Whether the model reads the clock the live replay kept (see [`super::replayed_clock`])
/// rather than the trace's own: for 5.3.1's clock-driven cache GC, asked for.
pub fn replayed_clock_for(version: JemallocVersion, options: &ProcessOptions) -> bool {
    version == JemallocVersion::V5_3_1 && options.experimental_tcache_gc == Some(true)
}

/// Runs `runs` live replays on the trace's clock and `runs` model runs, and compares them at
/// every `every` events. `exe` is the fragsim executable.
pub fn compare_on_clock<'a>(
    exe: &Path,
    allocator: &ProcessAllocator,
    trace: impl Into<ProcessTrace<'a>>,
    options: &ProcessOptions,
    every: u64,
    runs: usize,
    seed: u64,
) -> Result<ClockComparison> {
    ensure!(runs > 0, "no runs asked for");
    let trace = trace.into();
    let records = trace.records();
    let lives = (0..runs)
        .map(|_| live_clock_run(exe, allocator, trace, options, every))
        .collect::<Result<Vec<_>>>()?;
    let at: Vec<u64> = lives[0].checkpoints.iter().map(|c| c.0.event).collect();
    for l in &lives {
        ensure!(
            l.checkpoints.len() == at.len(),
            "live runs read different checkpoints"
        );
    }
    let times = super::decay::relative_times(records)?;
    let res = machine_coarse_clock_ns();
    let replayed = replayed_clock_for(lives[0].config.version, options);
    let models = lives
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let seed = seed.wrapping_add(k as u64);
            if !replayed {
                return model_run(l, records, options, seed, res, &at);
            }
            let reported: Vec<Reported> = l
                .checkpoints
                .iter()
                .map(|(s, d)| Reported {
                    event: s.event,
                    elapsed_ns: d.elapsed_ns,
                })
                .collect();
            let stamped = restamp(records, &replayed_times(&times, &reported));
            model_run(l, &stamped, options, seed, res, &at)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut checkpoints = Vec::with_capacity(at.len());
    for (c, &event) in at.iter().enumerate() {
        let mean = |j: usize| models.iter().map(|m| m[c][j]).sum::<f64>() / models.len() as f64;
        let real = |f: &dyn Fn(&super::decay::LiveDecay, u64) -> u64| {
            Band::of(lives.iter().map(|l| {
                let (s, d) = &l.checkpoints[c];
                f(d, s.active_bytes) as f64
            }))
        };
        checkpoints.push(ClockCheckpoint {
            event,
            time_ns: times[(event - 1) as usize],
            model_active: mean(0),
            real_active: real(&|_, a| a),
            model_resident: mean(1),
            real_resident: real(&|d, _| d.resident_bytes),
            model_dirty: mean(2),
            real_dirty: real(&|d, _| d.dirty_bytes),
            model_muzzy: mean(3),
            real_muzzy: real(&|d, _| d.muzzy_bytes),
            model_retained: mean(4),
            real_retained: real(&|d, _| d.retained_bytes),
            model_metadata: mean(5),
            real_metadata: real(&|d, a| d.resident_bytes.saturating_sub(a + d.dirty_bytes)),
        });
    }
    Ok(ClockComparison {
        version: lives[0].config.version.as_str().to_string(),
        narenas: lives[0].narenas,
        runs,
        events: times.len() as u64,
        clock_resolution_ns: res,
        replayed_clock: replayed,
        metadata0: lives.iter().map(|l| l.metadata0 as f64).sum::<f64>() / runs as f64,
        metadata_fresh: lives.iter().map(|l| l.metadata_fresh as f64).sum::<f64>() / runs as f64,
        checkpoints,
    })
}
