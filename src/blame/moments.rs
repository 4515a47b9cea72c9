//! Blames at several moments from one reading of the trace (`fragsim view`'s slider): the
//! first pass once, then one replay that charges the model's memory as it passes each event.

use super::{first_pass, At, Blame, BlameError, BlameSpec, Holders};
use crate::analysis::{self, Analysis, Finding, TraceSource};
use crate::engine::{RecordConsumer, RunError};
use crate::export::Summary;
use crate::trace::{Record, SiteTable, TraceError};

/// The blame after each of `events` (1-based, calls, thread exits and controls, as
/// `replay --process` counts them), in ascending order, repeats dropped; the same blames as
/// [`super::blame_stream`] at each, from two readings in all. `spec.at` is not used.
pub fn blame_moments(
    source: TraceSource<'_>,
    spec: &BlameSpec,
    events: &[u64],
) -> Result<Vec<Blame>, RunError<BlameError, TraceError>> {
    blame_moments_reopened(|| source.records(), spec, events)
}

/// [`blame_moments`] over any re-opening of a trace's records (`open` gives them afresh).
pub(crate) fn blame_moments_reopened<I, E>(
    open: impl Fn() -> Result<I, E>,
    spec: &BlameSpec,
    events: &[u64],
) -> Result<Vec<Blame>, RunError<BlameError, E>>
where
    I: Iterator<Item = Result<Record, E>>,
{
    let count_only = BlameSpec {
        at: At::End,
        ..spec.clone()
    };
    let first = first_pass(open().map_err(RunError::Trace)?, &count_only)?;
    if first.events == 0 {
        return Err(RunError::Consumer(BlameError::Empty));
    }
    let mut targets: Vec<u64> = events.iter().map(|&e| e.max(1)).collect();
    targets.sort_unstable();
    targets.dedup();
    if let Some(&last) = targets.last().filter(|&&l| l > first.events) {
        return Err(RunError::Consumer(BlameError::PastEnd {
            at: last,
            events: first.events,
        }));
    }
    let by_class = first.sites.is_empty();
    let run = AtMoments {
        holders: Holders::new(spec).map_err(RunError::Consumer)?,
        n: 0,
        targets,
        next: 0,
        events: first.events,
        sites: first.sites,
        by_class,
        out: Vec::new(),
    };
    let findings = analysis::run_stream(
        open().map_err(RunError::Trace)?,
        vec![Box::new(run)],
        &|_| {},
    )?;
    Ok(analysis::results::<Vec<Blame>>(findings).concat())
}

/// The blame's model, charged after each target event.
struct AtMoments {
    holders: Holders,
    n: u64,
    targets: Vec<u64>,
    next: usize,
    events: u64,
    sites: SiteTable,
    by_class: bool,
    out: Vec<Blame>,
}

/// The moments as an analysis: its finding's result is the blames, in event order.
impl Analysis<BlameError> for AtMoments {
    fn finish(self: Box<Self>) -> Result<Finding, BlameError> {
        let mut summary = Summary::new("blames at several moments");
        summary.field("moments", "moments", self.out.len() as u64);
        Ok(Finding::new(summary, self.out))
    }

    fn record(&mut self, r: &Record) -> Result<(), BlameError> {
        if self.next == self.targets.len() {
            return Ok(());
        }
        self.holders.record(r)?;
        if matches!(r, Record::Mapping { .. }) {
            return Ok(());
        }
        self.n += 1;
        if self.targets[self.next] == self.n {
            let b = self
                .holders
                .blame(self.n, self.events, self.sites.clone(), self.by_class)?;
            self.out.push(b);
            self.next += 1;
        }
        Ok(())
    }
}
