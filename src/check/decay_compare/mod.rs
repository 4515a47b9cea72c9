//! The decay model against the real allocator on the trace's clock: N live runs (each a
//! fresh child, [`super::clocked_child::live_clock_run`]) and N model runs (seeds `seed..seed+N`),
//! compared at every checkpoint: the real runs' mean and min-max of resident, the model's
//! mean over seeds, and its error against the real mean beside the real spread.
//!
//! The live runs' band is in `band.rs`, the model runs (engine consumers) in `model.rs`.

mod band;
mod model;

pub use band::{Band, RealBand, RealPoint, RunStart};

use super::clocked_child::{live_clock_run, StartMeta};
use super::process::ProcessAllocator;
use super::process_trace::ProcessInput;
use super::replayed_clock::{replayed_times, restamp, Reported};
use crate::analysis::TraceSource;
use crate::process::{machine_coarse_clock_ns, ProcessOptions};
use crate::sizeclass::JemallocVersion;
use crate::trace::Record;
use anyhow::{ensure, Result};
use model::{run_clock, run_models, ClockModel, ModelPoint};
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

/// Whether the model reads the clock the live replay kept (see [`super::replayed_clock`])
/// rather than the trace's own: for 5.3.1's clock-driven cache GC, asked for, and for
/// background threads, which sleep on the wall clock while the replay falls behind the
/// trace's times.
pub(crate) fn replayed_clock_for(version: JemallocVersion, options: &ProcessOptions) -> bool {
    (version == JemallocVersion::V5_3_1 && options.experimental_tcache_gc == Some(true))
        || options.background_thread
}

/// Runs `runs` live replays on the trace's clock and `runs` model runs, and compares them at
/// every `every` events. `exe` is the fragsim executable. Returns the live runs' band too (to
/// keep: `super::saved_band`).
pub fn compare_on_clock<'a>(
    exe: &Path,
    allocator: &ProcessAllocator,
    trace: impl Into<TraceSource<'a>>,
    options: &ProcessOptions,
    every: u64,
    runs: usize,
    seed: u64,
) -> Result<(RealBand, ClockComparison)> {
    ensure!(runs > 0, "no runs asked for");
    let trace = trace.into();
    // The models restamp the records per live run, so this comparison holds them (each live
    // run lasts as long as the trace did: it is for short traces).
    let records = trace.load()?;
    let records = &records[..];
    let lives = (0..runs)
        .map(|_| live_clock_run(exe, allocator, trace, options, every))
        .collect::<Result<Vec<_>>>()?;
    let band = RealBand::of(&lives)?;
    let res = machine_coarse_clock_ns();
    if !replayed_clock_for(band.config.version, options) {
        let c = compare_with_band(&band, records, options, seed, res)?;
        return Ok((band, c));
    }
    // Each model reads its own run's clock: one engine pass per run.
    let times = super::clocked_child::relative_times(records)?;
    let at: Vec<u64> = band.points.iter().map(|p| p.event).collect();
    let models = lives
        .iter()
        .zip(&band.runs)
        .enumerate()
        .map(|(k, (l, start))| {
            let reported: Vec<Reported> = l
                .checkpoints
                .iter()
                .map(|(s, d)| Reported {
                    event: s.event,
                    elapsed_ns: d.elapsed_ns,
                })
                .collect();
            let stamped = restamp(records, &replayed_times(&times, &reported));
            let clock = run_clock(seed, k, res, start);
            let model = ClockModel::new(&band, start, options, clock, &at)?;
            Ok(run_models(&stamped, vec![model])?.remove(0))
        })
        .collect::<Result<Vec<_>>>()?;
    let c = assemble(&band, &times, res, true, &models)?;
    Ok((band, c))
}

/// The model (one run per live run of `band`, seeds `seed..`, on the trace's own times read
/// through a coarse clock of `resolution_ns`) against a band measured before: the
/// comparison [`compare_on_clock`] makes, without the live runs.
pub(crate) fn compare_with_band(
    band: &RealBand,
    records: &[Record],
    options: &ProcessOptions,
    seed: u64,
    resolution_ns: u64,
) -> Result<ClockComparison> {
    ensure!(
        !replayed_clock_for(band.config.version, options),
        "experimental_tcache_gc:true on 5.3.1 and background_thread:true read the live runs' own clock: compare them live"
    );
    let times = super::clocked_child::relative_times(records)?;
    let at: Vec<u64> = band.points.iter().map(|p| p.event).collect();
    let models = band
        .runs
        .iter()
        .enumerate()
        .map(|(k, start)| {
            let clock = run_clock(seed, k, resolution_ns, start);
            ClockModel::new(band, start, options, clock, &at)
        })
        .collect::<Result<Vec<_>>>()?;
    let models = run_models(records, models)?;
    assemble(band, &times, resolution_ns, false, &models)
}

/// The comparison of `models` (each run's points) with `band`.
fn assemble(
    band: &RealBand,
    times: &[u64],
    resolution_ns: u64,
    replayed: bool,
    models: &[Vec<ModelPoint>],
) -> Result<ClockComparison> {
    let runs = band.runs.len();
    ensure!(
        models.iter().all(|m| m.len() == band.points.len()),
        "the trace ends before the band's last checkpoint: is it the trace the band was measured on?"
    );
    let mean = |c: usize, j: usize| models.iter().map(|m| m[c][j]).sum::<f64>() / runs as f64;
    let checkpoints = band
        .points
        .iter()
        .enumerate()
        .map(|(c, p)| ClockCheckpoint {
            event: p.event,
            time_ns: times[(p.event - 1) as usize],
            model_active: mean(c, 0),
            real_active: p.active,
            model_resident: mean(c, 1),
            real_resident: p.resident,
            model_dirty: mean(c, 2),
            real_dirty: p.dirty,
            model_muzzy: mean(c, 3),
            real_muzzy: p.muzzy,
            model_retained: mean(c, 4),
            real_retained: p.retained,
            model_metadata: mean(c, 5),
            real_metadata: p.metadata,
        })
        .collect();
    let meta = |f: fn(&StartMeta) -> u64| {
        band.runs
            .iter()
            .map(|r| f(&r.start_meta) as f64)
            .sum::<f64>()
            / runs as f64
    };
    Ok(ClockComparison {
        version: band.config.version.as_str().to_string(),
        narenas: band.narenas,
        runs,
        events: times.len() as u64,
        clock_resolution_ns: resolution_ns,
        replayed_clock: replayed,
        metadata0: meta(|m| m.resident0),
        metadata_fresh: meta(|m| m.resident_fresh),
        checkpoints,
    })
}
