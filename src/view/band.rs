//! The real allocator's resident band on the page's timeline: what a band file of `replay
//! --process --live --honour-clock --runs N --save-band FILE` holds (the min and max of
//! `stats.resident` over N live runs at each checkpoint, and how it was measured; the CLI
//! reads the file), checked against the trace the page is of.

use super::ViewError;
use crate::sizeclass::{build_title, AllocatorConfig};

/// A band, as the page needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// Live runs the band is over.
    pub runs: usize,
    /// The trace, the options, the time scale, the decay seed and the coarse clock's
    /// resolution the band was measured with, and the build.
    pub trace: String,
    pub malloc_conf: String,
    pub time_scale: f64,
    pub seed: u64,
    pub clock_resolution_ns: u64,
    pub config: AllocatorConfig,
    /// Resident bytes at each checkpoint: (event, min, max) over the runs.
    pub points: Vec<(u64, f64, f64)>,
    /// The model's resident bytes at each checkpoint as `fragsim report` compares it with the
    /// band: one run per live run, each from that run's start-up as measured (the replaying
    /// child's own memory), the mean of them; and its mean error against the runs' mean.
    /// Empty where the band's clock cannot be modelled apart from its live runs.
    pub model: Vec<(u64, f64)>,
    pub model_mean_error: f64,
}

impl Band {
    /// Refused unless the band's last checkpoint is the trace's last event (`events`: calls
    /// and thread exits, as the band counts them; a band ends at its trace's last event).
    pub fn check(&self, events: u64) -> Result<(), ViewError> {
        let band_events = self.points.last().map_or(0, |p| p.0);
        if band_events != events {
            return Err(ViewError::Band(format!(
                "measured on '{}', a trace of {band_events} events, and this trace has {events}",
                self.trace
            )));
        }
        Ok(())
    }

    /// The model line's legend: what it is and how far from the runs' mean.
    pub(crate) fn model_legend(&self) -> String {
        format!(
            "model from each live run's start-up, mean of {} (mean error {:.3} MiB)",
            self.runs,
            self.model_mean_error / (1u64 << 20) as f64
        )
    }

    /// The legend's words: the real allocator's run-to-run band and how it was measured.
    pub fn legend(&self) -> String {
        format!(
            "real {} resident, min to max over {} timed live runs (malloc_conf {}, time scale {})",
            build_title(&self.config),
            self.runs,
            if self.malloc_conf.is_empty() {
                "none"
            } else {
                &self.malloc_conf
            },
            self.time_scale
        )
    }
}
