//! The live runs' side of the decay comparison: each run's start as measured, and the band
//! (mean, min and max over runs) at every checkpoint.

use crate::check::clocked_child::{LiveClockRun, LiveDecay, StartMeta};
use crate::sizeclass::AllocatorConfig;
use anyhow::{ensure, Context, Result};

/// Mean, min and max over runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Band {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Band {
    pub(super) fn of(v: impl Iterator<Item = f64>) -> Band {
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
    /// How the kernel the run had placed its mappings.
    pub map_align: crate::process::MapAlign,
}

impl LiveClockRun {
    pub(crate) fn run_start(&self) -> RunStart {
        RunStart {
            start_ns: self.start_ns,
            residue: self.residue,
            start_meta: self.start_meta,
            below: self.below,
            heap: self.heap,
            heap_mapping: self.heap_mapping,
            // The live child ran here.
            map_align: crate::process::machine_map_align(),
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
/// measured once can be compared again ([`crate::check::saved_band`]).
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
                let real = |f: &dyn Fn(&LiveDecay, u64) -> u64| {
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
