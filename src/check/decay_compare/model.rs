//! The model's side of the decay comparison: one model run per live run as an engine
//! consumer, all seeds in one pass.

use super::band::{RealBand, RunStart};
use crate::analysis::{self, Analysis, Finding};
use crate::engine::RunError;
use crate::export::Summary;
use crate::process::{DecayClock, Metadata, Process, ProcessError, ProcessOptions, ProcessStats};
use crate::trace::Record;
use anyhow::Result;

/// The model's statistics at each checkpoint of one run.
pub(super) type ModelPoint = [f64; 6];

/// The statistics a checkpoint compares, in [`ModelPoint`]'s order.
fn point(s: &ProcessStats) -> ModelPoint {
    [
        s.active_bytes as f64,
        s.resident_bytes as f64,
        s.dirty_bytes as f64,
        s.muzzy_bytes as f64,
        s.retained_bytes as f64,
        s.metadata_bytes as f64,
    ]
}

/// One model run as an analysis: the statistics after each of the `at` records
/// (calls and thread exits, counted together as the live child counts them).
pub(super) struct ClockModel<'a> {
    model: Process,
    at: &'a [u64],
    records: u64,
    out: Vec<ModelPoint>,
}

impl<'a> ClockModel<'a> {
    /// The model of run `start` of `band`, on the decay clock seeded `seed`.
    pub(super) fn new(
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
            base_records: None,
            ctl_arena_bytes: 0,
            map_align: start.map_align,
            // `ClockReader::header` makes it after the workers.
            idle_below: true,
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
        // The model starts from the live child's addresses: the recorded program's mappings
        // are not its.
        if let Record::Mapping { .. } = r {
            return Ok(());
        }
        self.model.apply(r)?;
        self.records += 1;
        if self.at.get(self.out.len()) == Some(&self.records) {
            self.out.push(point(self.model.stats()));
        }
        Ok(())
    }
}

/// One seed's model as an analysis: its finding's result is its points, one per `at`.
impl Analysis<ProcessError> for ClockModel<'_> {
    fn record(&mut self, r: &Record) -> Result<(), ProcessError> {
        self.step(r)
    }

    fn finish(self: Box<Self>) -> Result<Finding, ProcessError> {
        let mut summary = Summary::new("the decay model at the live run's checkpoints");
        summary.field("points", "points", self.out.len() as u64);
        Ok(Finding::new(summary, self.out))
    }
}

/// Feeds `records` to `models` in one pass, each an analysis; returns each one's points.
pub(super) fn run_models(
    records: &[Record],
    models: Vec<ClockModel<'_>>,
) -> Result<Vec<Vec<ModelPoint>>> {
    let input = records
        .iter()
        .map(|r| Ok::<_, std::convert::Infallible>(r.clone()));
    let analyses = models
        .into_iter()
        .map(|m| Box::new(m) as Box<dyn Analysis<ProcessError> + '_>)
        .collect();
    // One pass, one analysis per seed, each on a thread of its own.
    let findings = analysis::run_stream(input, analyses, &|_| {}).map_err(|e| match e {
        RunError::Consumer(e) => anyhow::Error::from(e),
        RunError::Trace(never) => match never {},
    })?;
    Ok(analysis::results(findings))
}

/// Run `k`'s decay clock: seed `seed + k`, its live run's start.
pub(super) fn run_clock(seed: u64, k: usize, resolution_ns: u64, start: &RunStart) -> DecayClock {
    DecayClock {
        seed: seed.wrapping_add(k as u64),
        resolution_ns,
        start_ns: start.start_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::super::RealPoint;
    use super::*;
    use crate::check::clocked_child::StartMeta;
    use std::path::Path;

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
                    plain.push(point(m.model.stats()));
                }
            }
            assert_eq!(points, &plain, "seed {k}");
        }
        assert!(engine[0] != engine[1], "the seeds differ");
    }
}
