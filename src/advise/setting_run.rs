//! One setting's process model as an engine consumer: its peak, its means (over records,
//! over the trace's time, resident) and the active bytes at the peak taken apart.

use super::{AdviseError, Setting, SettingResult};
use crate::engine::RecordConsumer;
use crate::process::{DecayClock, Metadata, Process, ProcessError, ProcessSummary};
use crate::sizeclass::SizeClasses;
use crate::trace::Record;
use serde::Serialize;

/// What the active bytes at the peak hold; the parts add up to the peak exactly:
/// `requested + rounding + cached + cache_blocks + empty_regions + pad = active`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PeakParts {
    /// Bytes the program's live objects asked for.
    pub requested: u64,
    /// Their usable minus requested bytes (size-class rounding).
    pub rounding: u64,
    /// Objects held in thread caches (`stats.arenas.<i>.tcache_bytes`, summed).
    pub cached: u64,
    /// The caches' own blocks (pointer stacks), one per thread with a cache, in arena 0.
    pub cache_blocks: u64,
    /// Free regions of live slabs, and the tail bytes a slab cannot use: slab pages minus
    /// the regions in use, from every bin's `curslabs` and `curregs`.
    pub empty_regions: u64,
    /// The rest of the active pages: the padding page of each live large extent
    /// (cache-oblivious builds; cached large objects and cache blocks included).
    pub pad: u64,
}

impl PeakParts {
    pub fn total(&self) -> u64 {
        self.requested
            + self.rounding
            + self.cached
            + self.cache_blocks
            + self.empty_regions
            + self.pad
    }
}

/// `(size, slab size)` of every bin of a build.
fn bin_shapes(classes: &SizeClasses) -> Vec<(u64, u64)> {
    classes
        .bins()
        .iter()
        .map(|c| (c.size, c.slab_size))
        .collect()
}

/// One setting as an engine consumer.
pub(super) struct SettingRun {
    model: Process,
    bins: Vec<(u64, u64)>,
    block_bytes: u64,
    summary: ProcessSummary,
    at_peak: PeakParts,
    time: TimeMean,
}

/// The time-weighted mean: the state after each record holds until the next record's time.
#[derive(Default)]
struct TimeMean {
    first: Option<u64>,
    last: u64,
    last_active: u64,
    weighted: u128,
    /// A record without a time: no time mean.
    untimed: bool,
}

impl TimeMean {
    fn observe(&mut self, time: Option<u64>, active: u64) {
        let Some(t) = time else {
            self.untimed = true;
            return;
        };
        match self.first {
            None => self.first = Some(t),
            // Threads' clocks may interleave a little out of order: no negative spans.
            Some(_) => {
                self.weighted +=
                    u128::from(self.last_active) * u128::from(t.saturating_sub(self.last));
            }
        }
        self.last = self.last.max(t);
        self.last_active = active;
    }

    fn mean(&self) -> Option<f64> {
        let first = self.first?;
        (!self.untimed && self.last > first)
            .then(|| self.weighted as f64 / (self.last - first) as f64)
    }
}

impl SettingRun {
    pub(super) fn new(
        setting: &Setting,
        cpus: u32,
        clock: DecayClock,
        metadata: Metadata,
    ) -> Result<SettingRun, ProcessError> {
        let config = setting.config();
        let classes =
            SizeClasses::new(config).map_err(|e| crate::sim::SimError::Config(e.to_string()))?;
        let mut model = Process::new(config, setting.options.clone(), cpus)?;
        // As `replay --process` sets its model up (`cli::process::model_run`).
        model.set_decay_clock(clock);
        model.set_metadata(metadata);
        let block_bytes = if setting.options.tcache {
            model.cache_block_bytes()
        } else {
            0
        };
        Ok(SettingRun {
            model,
            bins: bin_shapes(&classes),
            block_bytes,
            summary: ProcessSummary::default(),
            at_peak: PeakParts::default(),
            time: TimeMean::default(),
        })
    }

    fn observe(&mut self, time: Option<u64>) {
        let s = *self.model.stats();
        let before = self.summary.peak_active_bytes;
        self.summary.observe(&s);
        self.time.observe(time, s.active_bytes);
        if s.active_bytes > before {
            self.at_peak = self.parts();
        }
    }

    /// The decomposition now: requested and cached from the model's totals, cache blocks
    /// from the live threads, empty regions from every bin's slabs, rounding and padding
    /// the remainders of allocated and active bytes.
    fn parts(&self) -> PeakParts {
        let s = self.model.stats();
        let snapshot = self.model.snapshot();
        let mut slab_bytes = 0;
        let mut region_bytes = 0;
        for arena in &snapshot.arenas {
            for (b, &(size, slab)) in arena.bins.iter().zip(&self.bins) {
                slab_bytes += b.curslabs * slab;
                region_bytes += b.curregs * size;
            }
        }
        let cache_blocks = s.threads_live * self.block_bytes;
        let empty_regions = slab_bytes - region_bytes;
        PeakParts {
            requested: s.requested_bytes,
            rounding: s.allocated_bytes - s.requested_bytes - s.tcache_bytes - cache_blocks,
            cached: s.tcache_bytes,
            cache_blocks,
            empty_regions,
            pad: s.active_bytes - s.allocated_bytes - empty_regions,
        }
    }

    fn apply(&mut self, record: &Record, time: Option<u64>) -> Result<(), ProcessError> {
        self.model.apply(record)?;
        self.observe(time);
        Ok(())
    }

    pub(super) fn finish(self, setting: Setting) -> SettingResult {
        SettingResult {
            narenas: self.model.narenas(),
            setting,
            peak_active_bytes: self.summary.peak_active_bytes,
            peak_event: self.summary.at_active_peak.events,
            mean_active_bytes: self.summary.mean_active_bytes(),
            time_mean_active_bytes: self.time.mean(),
            at_peak: self.at_peak,
            peak_resident_bytes: self.summary.peak_resident_bytes,
            mean_resident_bytes: self.summary.mean_resident_bytes(),
            final_active_bytes: self.summary.final_stats.active_bytes,
            events: self.summary.final_stats.events,
        }
    }
}

impl RecordConsumer for SettingRun {
    type Error = ProcessError;

    fn record(&mut self, record: &Record) -> Result<(), ProcessError> {
        // A mapping places the model's memory; it is not an event to observe.
        if let Record::Mapping { .. } = record {
            return self.model.apply(record);
        }
        let time = record.time_ns();
        self.apply(record, time)
    }
}

/// One setting's process model as an analysis (`crate::analysis`): `advise` runs one per
/// setting in one pass; its finding's result is the setting's [`SettingResult`], its
/// summary the advice table's figures for that setting. A record the model refuses is an
/// [`AdviseError::Model`] naming the setting.
pub(crate) struct SettingModel {
    run: SettingRun,
    setting: Setting,
}

impl SettingModel {
    pub(super) fn new(run: SettingRun, setting: Setting) -> Self {
        SettingModel { run, setting }
    }
}

impl crate::analysis::Analysis<AdviseError> for SettingModel {
    fn record(&mut self, record: &Record) -> Result<(), AdviseError> {
        self.run
            .record(record)
            .map_err(|source| AdviseError::Model {
                setting: self.setting.label(),
                source,
            })
    }

    fn finish(self: Box<Self>) -> Result<crate::analysis::Finding, AdviseError> {
        let label = self.setting.label();
        let result = self.run.finish(self.setting);
        let mut summary = crate::export::Summary::new(format!("setting {label}"));
        summary
            .field("setting", "setting", label.as_str())
            .field("narenas", "arenas", u64::from(result.narenas))
            .field(
                "peak_resident_bytes",
                "peak resident bytes",
                result.peak_resident_bytes,
            )
            .field(
                "peak_active_bytes",
                "peak active bytes",
                result.peak_active_bytes,
            )
            .field(
                "final_active_bytes",
                "final active bytes",
                result.final_active_bytes,
            );
        Ok(crate::analysis::Finding::new(summary, result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_mean_weighs_each_state_until_the_next_record() {
        // 10 bytes for 1 ns, then 30 bytes for 3 ns: (10 + 90) / 4 = 25.
        let mut t = TimeMean::default();
        t.observe(Some(100), 10);
        t.observe(Some(101), 30);
        t.observe(Some(104), 0);
        assert_eq!(t.mean(), Some(25.0));
        t.observe(None, 0);
        assert_eq!(t.mean(), None);
    }
}
