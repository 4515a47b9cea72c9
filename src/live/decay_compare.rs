//! The decay model against the real allocator on the trace's clock: N live runs (each a
//! fresh child, [`super::decay::live_clock_run`]) and N model runs (seeds `seed..seed+N`),
//! compared at every checkpoint: the real runs' mean and min-max of resident, the model's
//! mean over seeds, and its error against the real mean beside the real spread.

use super::decay::{live_clock_run, LiveClockRun, StartMeta};
use super::process::{ProcessAllocator, ProcessTrace};
use super::replayed_clock::{replayed_times, restamp, Reported};
use crate::engine::{self, Consumer, RunError};
use crate::process::{
    machine_coarse_clock_ns, DecayClock, Metadata, Process, ProcessError, ProcessOptions,
};
use crate::sizeclass::{AllocatorConfig, JemallocVersion};
use crate::trace::{Call, Record};
use anyhow::{ensure, Context, Result};
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

/// What a model run takes from its live run: the child's start-up as measured (see
/// [`LiveClockRun`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStart {
    pub start_ns: u64,
    pub residue: u64,
    pub start_meta: StartMeta,
    pub below: u64,
    pub heap: u64,
    pub heap_mapping: (u64, u64),
}

impl LiveClockRun {
    pub fn run_start(&self) -> RunStart {
        RunStart {
            start_ns: self.start_ns,
            residue: self.residue,
            start_meta: self.start_meta,
            below: self.below,
            heap: self.heap,
            heap_mapping: self.heap_mapping,
        }
    }
}

/// The live runs' figures at one checkpoint (after `event` records).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RealPoint {
    pub event: u64,
    pub active: Band,
    pub resident: Band,
    pub dirty: Band,
    pub muzzy: Band,
    pub retained: Band,
    /// `resident - active - dirty`.
    pub metadata: Band,
}

/// The live runs of one comparison as the model needs them: the build, its arenas, each
/// run's start and the band at every checkpoint. Kept apart from the runs so that a band
/// measured once can be compared again ([`super::decay_band`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RealBand {
    pub config: AllocatorConfig,
    pub narenas: u32,
    pub runs: Vec<RunStart>,
    pub points: Vec<RealPoint>,
}

impl RealBand {
    /// The band of `lives` (all of one build, read at the same checkpoints).
    pub fn of(lives: &[LiveClockRun]) -> Result<RealBand> {
        let first = lives.first().context("no live runs")?;
        let at: Vec<u64> = first.checkpoints.iter().map(|c| c.0.event).collect();
        for l in lives {
            ensure!(
                l.checkpoints.len() == at.len(),
                "live runs read different checkpoints"
            );
        }
        let points = at
            .iter()
            .enumerate()
            .map(|(c, &event)| {
                let real = |f: &dyn Fn(&super::decay::LiveDecay, u64) -> u64| {
                    Band::of(lives.iter().map(|l| {
                        let (s, d) = &l.checkpoints[c];
                        f(d, s.active_bytes) as f64
                    }))
                };
                RealPoint {
                    event,
                    active: real(&|_, a| a),
                    resident: real(&|d, _| d.resident_bytes),
                    dirty: real(&|d, _| d.dirty_bytes),
                    muzzy: real(&|d, _| d.muzzy_bytes),
                    retained: real(&|d, _| d.retained_bytes),
                    metadata: real(&|d, a| d.resident_bytes.saturating_sub(a + d.dirty_bytes)),
                }
            })
            .collect();
        Ok(RealBand {
            config: first.config,
            narenas: first.narenas,
            runs: lives.iter().map(LiveClockRun::run_start).collect(),
            points,
        })
    }
}

/// One model run as an engine consumer: the statistics after each of the `at` records
/// (calls and thread exits, counted together as the live child counts them).
struct ClockModel<'a> {
    model: Process,
    at: &'a [u64],
    records: u64,
    out: Vec<ModelPoint>,
}

impl<'a> ClockModel<'a> {
    /// The model of run `start` of `band`, on the decay clock seeded `seed`.
    fn new(
        band: &RealBand,
        start: &RunStart,
        options: &ProcessOptions,
        clock: DecayClock,
        at: &'a [u64],
    ) -> Result<Self> {
        let mut o = options.clone();
        o.narenas = Some(band.narenas);
        // The cache GC the child runs (`ProcessOptions::to_conf`): 5.3.1's clock-driven one
        // only when asked for, modelled on the trace's clock (`process/model/gc.rs`).
        o.experimental_tcache_gc = Some(options.experimental_tcache_gc.unwrap_or(false));
        let mut model = Process::new(band.config, o, 1)?;
        model.set_decay_clock(clock);
        let sm = start.start_meta;
        model.set_metadata(Metadata {
            base_bytes: sm.resident0,
            per_arena_bytes: sm.resident_fresh,
            base_allocated: sm.allocated0,
            per_arena_allocated: sm.allocated_fresh,
            rtree_bytes: sm.rtree.unwrap_or(0),
            below: start.below,
            heap: start.heap,
            heap_mapping: start.heap_mapping,
        });
        model.replayer_start(start.residue)?;
        Ok(ClockModel {
            model,
            at,
            records: 0,
            out: Vec::with_capacity(at.len()),
        })
    }

    fn step(&mut self, r: &Record) -> Result<(), ProcessError> {
        self.model.apply(r)?;
        self.records += 1;
        if self.at.get(self.out.len()) == Some(&self.records) {
            let s = self.model.stats();
            self.out.push([
                s.active_bytes as f64,
                s.resident_bytes as f64,
                s.dirty_bytes as f64,
                s.muzzy_bytes as f64,
                s.retained_bytes as f64,
                s.metadata_bytes as f64,
            ]);
        }
        Ok(())
    }
}

impl Consumer for ClockModel<'_> {
    type Error = ProcessError;

    fn call(&mut self, _index: u64, call: &Call) -> Result<(), ProcessError> {
        self.step(&Record::Call(*call))
    }

    fn thread_exit_at(
        &mut self,
        thread: u32,
        _: u64,
        time_ns: Option<u64>,
    ) -> Result<(), ProcessError> {
        self.step(&Record::ThreadExit { thread, time_ns })
    }
}

/// Feeds `records` to `models` in one engine pass; returns each one's points.
fn run_models(records: &[Record], mut models: Vec<ClockModel<'_>>) -> Result<Vec<Vec<ModelPoint>>> {
    let input = records
        .iter()
        .map(|r| Ok::<_, std::convert::Infallible>(r.clone()));
    engine::run(input, &mut models, &|_| {}).map_err(|e| match e {
        RunError::Consumer(e) => anyhow::Error::from(e),
        RunError::Trace(never) => match never {},
    })?;
    Ok(models.into_iter().map(|m| m.out).collect())
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
    let c = compare_on_clock_band(exe, allocator, trace, options, every, runs, seed)?;
    Ok(c.1)
}

/// [`compare_on_clock`], with the live runs' band (to keep: [`super::decay_band`]).
pub fn compare_on_clock_band<'a>(
    exe: &Path,
    allocator: &ProcessAllocator,
    trace: impl Into<ProcessTrace<'a>>,
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
    let times = super::decay::relative_times(records)?;
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

/// Run `k`'s decay clock: seed `seed + k`, its live run's start.
fn run_clock(seed: u64, k: usize, resolution_ns: u64, start: &RunStart) -> DecayClock {
    DecayClock {
        seed: seed.wrapping_add(k as u64),
        resolution_ns,
        start_ns: start.start_ns,
    }
}

/// The model (one run per live run of `band`, seeds `seed..`, on the trace's own times read
/// through a coarse clock of `resolution_ns`) against a band measured before: the
/// comparison [`compare_on_clock`] makes, without the live runs.
pub fn compare_with_band(
    band: &RealBand,
    records: &[Record],
    options: &ProcessOptions,
    seed: u64,
    resolution_ns: u64,
) -> Result<ClockComparison> {
    ensure!(
        !replayed_clock_for(band.config.version, options),
        "experimental_tcache_gc:true on 5.3.1 reads the live runs' own clock: compare it live"
    );
    let times = super::decay::relative_times(records)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The models on the engine (all seeds in one pass) read at each checkpoint what one
    /// model per seed fed record by record reads (the loop this replaced).
    #[test]
    fn engine_models_match_a_plain_loop() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/traces/decay/bursty.trace"
        );
        let mut records = crate::trace::read_all(Path::new(path)).unwrap();
        records.retain(|r| !matches!(r, Record::Site { .. }));
        let options = ProcessOptions::parse("dirty_decay_ms:500,muzzy_decay_ms:0").unwrap();
        let start = RunStart {
            start_ns: 3_000_000,
            start_meta: StartMeta {
                resident0: 1_449_984,
                resident_fresh: 94_208,
                allocated0: 1_448_704,
                allocated_fresh: 92_880,
                rtree: Some(786_432),
            },
            ..RunStart::default()
        };
        let n = records.len() as u64;
        let band = RealBand {
            config: crate::sizeclass::Preset::LINKED.config(),
            narenas: 8,
            runs: vec![start; 3],
            points: (1..=n)
                .filter(|e| e % 97 == 0 || *e == n)
                .map(|event| RealPoint {
                    event,
                    ..RealPoint::default()
                })
                .collect(),
        };
        let at: Vec<u64> = band.points.iter().map(|p| p.event).collect();
        let clock = |k| run_clock(7, k, 4_000_000, &start);
        let models = (0..3)
            .map(|k| ClockModel::new(&band, &start, &options, clock(k), &at).unwrap())
            .collect();
        let engine = run_models(&records, models).unwrap();
        for (k, points) in engine.iter().enumerate() {
            let mut m = ClockModel::new(&band, &start, &options, clock(k), &at).unwrap();
            let mut plain = Vec::new();
            for (i, r) in records.iter().enumerate() {
                m.model.apply(r).unwrap();
                if at.contains(&(i as u64 + 1)) {
                    let s = m.model.stats();
                    plain.push([
                        s.active_bytes as f64,
                        s.resident_bytes as f64,
                        s.dirty_bytes as f64,
                        s.muzzy_bytes as f64,
                        s.retained_bytes as f64,
                        s.metadata_bytes as f64,
                    ]);
                }
            }
            assert_eq!(points, &plain, "seed {k}");
        }
        assert!(engine[0] != engine[1], "the seeds differ");
    }
}
