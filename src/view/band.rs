//! The real allocator's resident band on the page's timeline: a band file of `replay --process
//! --live --honour-clock --runs N --save-band FILE` (the min and max of `stats.resident` over
//! N live runs at each checkpoint), checked against the trace the page is of.

use super::ViewError;
use crate::live::decay_band::RecordedBand;
use crate::sizeclass::build_title;

/// What the timeline draws of a band.
#[derive(Clone, Debug, PartialEq)]
pub struct BandView {
    /// Live runs the band is over.
    pub runs: usize,
    /// The trace, the options and the time scale the band was measured with.
    pub trace: String,
    pub malloc_conf: String,
    pub time_scale: f64,
    pub build: String,
    /// Resident bytes at each checkpoint: (event, min, max) over the runs.
    pub points: Vec<(u64, f64, f64)>,
}

impl BandView {
    /// The band of `recorded` for a page of a trace of `events` events (calls and thread
    /// exits, as the band counts them): refused unless its last checkpoint is that event (a
    /// band ends at its trace's last event).
    pub fn of(recorded: &RecordedBand, events: u64) -> Result<BandView, ViewError> {
        let h = &recorded.header;
        let band_events = recorded.band.points.last().map_or(0, |p| p.event);
        if band_events != events {
            return Err(ViewError::Band(format!(
                "measured on '{}', a trace of {band_events} events, and this trace has {events}",
                h.trace
            )));
        }
        Ok(BandView {
            runs: recorded.band.runs.len(),
            trace: h.trace.clone(),
            malloc_conf: h.malloc_conf.clone(),
            time_scale: h.time_scale,
            build: build_title(&recorded.band.config),
            points: recorded
                .band
                .points
                .iter()
                .map(|p| (p.event, p.resident.min, p.resident.max))
                .collect(),
        })
    }

    /// The legend's words: the real allocator's run-to-run band and how it was measured.
    pub fn legend(&self) -> String {
        format!(
            "real {} resident, min to max over {} timed live runs (malloc_conf {}, time scale {})",
            self.build,
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
