//! Waste by call site: at one event of a trace (by default the active peak), every byte of
//! the process model's active memory is charged to the code that holds it.
//!
//! The trace runs through [`crate::process::Process`] (thread caches, arenas, threads; a
//! trace without threads is one thread) while this module remembers the call site of every
//! live object (`Call::site`, the stacks of [`Record::Site`]). At the chosen event:
//!
//! - a live object's requested bytes, and its rounding (usable - requested), go to the site
//!   that allocated it (for a realloc, the site of the realloc);
//! - the free regions of a slab (and any tail a slab's regions do not fill) go to the
//!   holders of its used regions, split by regions held: a site's live objects, the objects
//!   held in thread caches, the caches' own blocks (remainders of the integer split go
//!   to the largest remainders, so every slab is charged exactly: `blame/charge.rs`);
//! - a large block's padding page (cache-oblivious `large_pad`) goes to its own line;
//! - objects held in thread caches and the caches' blocks are their own lines.
//!
//! The lines add up exactly to the model's active bytes; whatever could not be attributed
//! (none, on every trace the tests run) is a line of its own, [`Charge::Unattributed`].
//! As a second view, a line's `pinned_bytes` are the bytes of the slabs that only its
//! objects hold: the pages its frees would give back to the page allocator.
//!
//! A trace without call sites is charged by size class instead (the usable size).

mod charge;
mod demangle;
mod moments;
mod table;

pub use moments::blame_moments;
pub(crate) use table::blame_table;
pub(crate) use table::blame_table_with;
pub(crate) use table::folded_lines;
pub(crate) use table::headline;
pub(crate) use table::waste_profile;
pub(crate) use table::TABLE_DEPTH;

use crate::analysis::{self, Analysis, Finding, TraceSource};
use crate::engine::{self, RecordConsumer, RunError};
use crate::export::Summary;
use crate::process::{Process, ProcessError, ProcessOptions, ProcessSummary};
use crate::sizeclass::AllocatorConfig;
use crate::trace::{Event, Frame, Record, SiteId, SiteTable, TraceError};
use serde::Serialize;

/// The event at which memory is charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// The first event where active bytes peak.
    Peak,
    /// After the last record.
    End,
    /// After event `n` (1-based over calls and thread exits, as `replay --process` counts
    /// them: its "event of the active peak").
    Event(u64),
}

impl At {
    /// `peak`, `end` or an event number from 1.
    pub fn parse(text: &str) -> Result<At, BlameError> {
        match text {
            "peak" => Ok(At::Peak),
            "end" => Ok(At::End),
            _ => match text.parse::<u64>() {
                Ok(n) if n >= 1 => Ok(At::Event(n)),
                _ => Err(BlameError::BadAt(text.to_string())),
            },
        }
    }
}

/// Why a blame cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlameError {
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("--at '{0}': give peak, end or an event number from 1")]
    BadAt(String),
    #[error("--at {at}: the trace has {events} events")]
    PastEnd { at: u64, events: u64 },
    #[error("the trace has no events")]
    Empty,
    #[error("event {event}: the model's memory does not add up: {what}")]
    Inconsistent { event: u64, what: String },
}

/// Who a byte of active memory is charged to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Charge {
    /// Objects allocated at a call site of the trace.
    Site(SiteId),
    /// Objects whose call had no site, in a trace that has sites.
    NoSite,
    /// Objects of this usable size, in a trace without sites.
    Class(u64),
    /// Objects the program freed that a thread cache still holds.
    ThreadCaches,
    /// The thread caches' own blocks (their pointer stacks, in arena 0).
    CacheBlocks,
    /// The padding page of every large block (`large_pad`).
    LargePadding,
    /// Active memory no live object, cache or block accounts for.
    Unattributed,
}

impl Charge {
    /// Whether this line stands for the program's code (a site or a class), not the
    /// allocator's own holdings.
    pub(crate) fn is_code(self) -> bool {
        matches!(self, Charge::Site(_) | Charge::NoSite | Charge::Class(_))
    }
}

/// The bytes charged to one [`Charge`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Line {
    /// Live objects (or cached objects, cache blocks, padded large blocks).
    pub objects: u64,
    pub requested_bytes: u64,
    /// Usable minus requested bytes.
    pub rounding_bytes: u64,
    /// The share of free regions (and slab tails) of the slabs this line holds regions in.
    pub empty_region_bytes: u64,
    /// Usable bytes of cached objects and cache blocks; padding pages; unattributed bytes.
    pub held_bytes: u64,
    /// Bytes of the slabs whose used regions all belong to this line (not part of
    /// [`Line::charged_bytes`]: a second view of the same memory).
    pub pinned_bytes: u64,
}

impl Line {
    /// The active bytes charged to this line.
    pub fn charged_bytes(&self) -> u64 {
        self.requested_bytes + self.rounding_bytes + self.empty_region_bytes + self.held_bytes
    }

    /// Charged bytes the program did not ask for.
    pub fn waste_bytes(&self) -> u64 {
        self.charged_bytes() - self.requested_bytes
    }

    pub fn add(&mut self, other: &Line) {
        self.objects += other.objects;
        self.requested_bytes += other.requested_bytes;
        self.rounding_bytes += other.rounding_bytes;
        self.empty_region_bytes += other.empty_region_bytes;
        self.held_bytes += other.held_bytes;
        self.pinned_bytes += other.pinned_bytes;
    }
}

/// How to run the blame.
#[derive(Clone, Debug)]
pub struct BlameSpec {
    pub config: AllocatorConfig,
    pub options: ProcessOptions,
    /// CPUs for the default `narenas`.
    pub cpus: u32,
    pub at: At,
}

/// Active memory at one event, charged line by line.
#[derive(Clone, Debug)]
pub struct Blame {
    /// The event charged (1-based, calls and thread exits).
    pub event: u64,
    /// Events in the trace.
    pub events: u64,
    /// The model's active bytes at `event`; the lines add up to it.
    pub active_bytes: u64,
    /// Every line with bytes or objects, largest waste first (ties: larger charge, then key),
    /// then the sites that allocated before the event and hold nothing.
    pub lines: Vec<(Charge, Line)>,
    pub sites: SiteTable,
    /// The trace has no sites: objects are charged by size class.
    pub by_class: bool,
}

impl Blame {
    /// The blame's headline as named fields: the event, its active bytes and the waste
    /// charged.
    pub fn summary(&self) -> Summary {
        let total = self.total();
        let mut s = Summary::new(format!("blame at event {} of {}", self.event, self.events));
        s.field("event", "event", self.event)
            .field("active_bytes", "active bytes", self.active_bytes)
            .field("charged_bytes", "charged bytes", total.charged_bytes())
            .field("waste_bytes", "waste bytes", total.waste_bytes())
            .field("lines", "lines", self.lines.len() as u64);
        s
    }

    /// The sum of every line.
    pub fn total(&self) -> Line {
        let mut t = Line::default();
        for (_, l) in &self.lines {
            t.add(l);
        }
        t
    }

    /// A line's name: the site's number, `class N`, or the allocator's own line in brackets.
    pub fn label(&self, key: Charge) -> String {
        match key {
            Charge::Site(s) => s.to_string(),
            Charge::NoSite => "[no site]".into(),
            Charge::Class(c) => format!("class {c}"),
            Charge::ThreadCaches => "[thread caches]".into(),
            Charge::CacheBlocks => "[cache blocks]".into(),
            Charge::LargePadding => "[large padding]".into(),
            Charge::Unattributed => "[unattributed]".into(),
        }
    }

    /// A site's frames innermost first joined by `;` (empty for other lines).
    /// A site's first `depth` frames that are the program's own (no allocator entry point, no
    /// libc, libstdc++ or loader frame; all of them where none is), demangled: what a table
    /// shows (`main::{lambda()#1}::operator() const+0xd3e`).
    pub fn short_frames(&self, key: Charge, depth: usize) -> String {
        let Charge::Site(s) = key else {
            return String::new();
        };
        let Some(frames) = self.sites.get(s) else {
            return String::new();
        };
        let own: Vec<&Frame> = frames.iter().filter(|f| !demangle::is_runtime(f)).collect();
        let chosen: Vec<&Frame> = match own.is_empty() {
            true => frames.iter().collect(),
            false => own,
        };
        chosen
            .into_iter()
            .take(depth)
            .map(demangle::readable)
            .collect::<Vec<_>>()
            .join(";")
    }

    pub fn frames(&self, key: Charge) -> String {
        match key {
            Charge::Site(s) => self
                .sites
                .get(s)
                .map(|frames| {
                    frames
                        .iter()
                        .map(demangle::readable)
                        .collect::<Vec<_>>()
                        .join(";")
                })
                .unwrap_or_default(),
            _ => String::new(),
        }
    }
}

/// Replays `records` through the process model up to `spec.at` and charges its active memory
/// ([`blame_stream`] over records in memory).
pub(crate) fn blame(records: &[Record], spec: &BlameSpec) -> Result<Blame, BlameError> {
    blame_stream_reopened(engine::in_memory(records), spec).map_err(engine::consumer_error)
}

/// Replays a trace through the process model (one [`engine::run`] pass) up to `spec.at` and
/// charges its active memory. `open` gives the trace's records afresh: they are read twice,
/// once to count events, collect the sites and (for the peak) find the peak, once to reach
/// the event, so memory follows the live objects and the sites, never the trace's length.
pub fn blame_stream(
    source: TraceSource<'_>,
    spec: &BlameSpec,
) -> Result<Blame, RunError<BlameError, TraceError>> {
    blame_stream_reopened(|| source.records(), spec)
}

/// [`blame_stream`] over any re-opening of a trace's records (`open` gives them afresh).
pub(crate) fn blame_stream_reopened<I, E>(
    open: impl Fn() -> Result<I, E>,
    spec: &BlameSpec,
) -> Result<Blame, RunError<BlameError, E>>
where
    I: Iterator<Item = Result<Record, E>>,
{
    let first = first_pass(open().map_err(RunError::Trace)?, spec)?;
    let (events, sites) = (first.events, first.sites);
    if events == 0 {
        return Err(RunError::Consumer(BlameError::Empty));
    }
    let target = match spec.at {
        At::End => events,
        At::Event(n) if n > events => {
            return Err(RunError::Consumer(BlameError::PastEnd { at: n, events }))
        }
        At::Event(n) => n,
        // A trace whose active bytes never leave 0 peaks at its first event.
        At::Peak => first.peak.map_or(1, |s| s.at_active_peak.events.max(1)),
    };
    let by_class = sites.is_empty();
    let at = BlameAt {
        holders: Holders::new(spec).map_err(RunError::Consumer)?,
        target,
        events,
        sites,
        by_class,
    };
    // Read up to the target event, not beyond (sites and mappings are not events).
    let mut n = 0u64;
    let upto = open().map_err(RunError::Trace)?.take_while(move |r| {
        if n == target {
            return false;
        }
        if !matches!(r, Ok(Record::Site { .. } | Record::Mapping { .. })) {
            n += 1;
        }
        true
    });
    let findings = analysis::run_stream(upto, vec![Box::new(at)], &|_| {})?;
    let mut blames = analysis::results::<Blame>(findings);
    Ok(blames.remove(0))
}

/// The model charged at event `target` (its reading stops there), as an analysis: its
/// finding's result is the [`Blame`].
struct BlameAt {
    holders: Holders,
    target: u64,
    events: u64,
    sites: SiteTable,
    by_class: bool,
}

impl Analysis<BlameError> for BlameAt {
    fn record(&mut self, r: &Record) -> Result<(), BlameError> {
        self.holders.record(r)
    }

    fn finish(self: Box<Self>) -> Result<Finding, BlameError> {
        let blame = self
            .holders
            .blame(self.target, self.events, self.sites, self.by_class)?;
        Ok(Finding::new(blame.summary(), blame))
    }
}

impl Holders {
    fn new(spec: &BlameSpec) -> Result<Holders, BlameError> {
        Ok(Holders {
            model: Process::new(spec.config, spec.options.clone(), spec.cpus)?,
            site_of: Vec::new(),
            seen: std::collections::BTreeSet::new(),
        })
    }

    /// The model's active memory now, charged line by line (the blame at `event`, naming
    /// its sites from `sites`).
    fn blame(
        &self,
        event: u64,
        events: u64,
        sites: SiteTable,
        by_class: bool,
    ) -> Result<Blame, BlameError> {
        let key_of = |id: u32, usize: u64| {
            if by_class {
                Charge::Class(usize)
            } else {
                self.site_of
                    .get(id as usize)
                    .copied()
                    .flatten()
                    .map_or(Charge::NoSite, Charge::Site)
            }
        };
        let mut lines = charge::charge(&self.model, key_of)?;
        // Sites that allocated and hold nothing now are lines too (0 bytes, listed last): a
        // clean site is named, not lost.
        for &s in &self.seen {
            if !lines.iter().any(|(k, _)| *k == Charge::Site(s)) {
                lines.push((Charge::Site(s), Line::default()));
            }
        }
        Ok(Blame {
            event,
            events,
            active_bytes: self.model.stats().active_bytes,
            lines,
            sites,
            by_class,
        })
    }
}

/// The process model with the call site of every live object and the sites seen so far.
struct Holders {
    model: Process,
    site_of: Vec<Option<SiteId>>,
    seen: std::collections::BTreeSet<SiteId>,
}

impl RecordConsumer for Holders {
    type Error = BlameError;

    fn record(&mut self, r: &Record) -> Result<(), BlameError> {
        self.model.apply(r)?;
        if let Record::Call(c) = r {
            let id = match c.event {
                Event::Alloc { id, .. } => Some(id),
                // A realloc without a site keeps the one the object had.
                Event::Realloc { id, .. } if c.site.is_some() => Some(id),
                _ => None,
            };
            if let Some(s) = c.site {
                self.seen.insert(s);
            }
            if let Some(id) = id {
                let i = id as usize;
                if i >= self.site_of.len() {
                    self.site_of.resize(i + 1, None);
                }
                self.site_of[i] = c.site;
            }
        }
        Ok(())
    }
}

/// What the first reading gives: the events (calls and thread exits), the sites, and the
/// model's summary when the peak is wanted.
struct FirstPass {
    events: u64,
    sites: SiteTable,
    peak: Option<ProcessSummary>,
}

/// Counts the events, collects the sites (the readers check that sites are dense; a gap
/// is a caller's own records) and, for [`At::Peak`], runs the model to find the first event
/// where its active bytes peak.
fn first_pass<E>(
    records: impl Iterator<Item = Result<Record, E>>,
    spec: &BlameSpec,
) -> Result<FirstPass, RunError<BlameError, E>> {
    let mut sites = SiteTable::new();
    let mut site_error = None;
    let records = records.inspect(|r| {
        if let Ok(Record::Site { id, frames }) = r {
            if let Err(what) = sites.push(*id, frames.clone()) {
                site_error.get_or_insert(BlameError::Inconsistent { event: 0, what });
            }
        }
    });
    let model = match spec.at {
        At::Peak => Some(
            Process::new(spec.config, spec.options.clone(), spec.cpus)
                .map_err(|e| RunError::Consumer(e.into()))?,
        ),
        _ => None,
    };
    let count = Peak {
        events: 0,
        model,
        summary: ProcessSummary::default(),
    };
    let findings = analysis::run_stream(records, vec![Box::new(count)], &|_| {})?;
    if let Some(e) = site_error {
        return Err(RunError::Consumer(e));
    }
    let (events, peak) = analysis::results::<(u64, Option<ProcessSummary>)>(findings).remove(0);
    Ok(FirstPass {
        events,
        sites,
        peak,
    })
}

/// Counts events; with a model, observes its peak.
struct Peak {
    events: u64,
    model: Option<Process>,
    summary: ProcessSummary,
}

/// The first pass as an analysis: its finding's result is `(events, the model's summary
/// when the peak is wanted)`.
impl Analysis<BlameError> for Peak {
    fn finish(self: Box<Self>) -> Result<Finding, BlameError> {
        let mut summary = Summary::new("the blame's first reading");
        summary.field("events", "events", self.events);
        if self.model.is_some() {
            summary.field(
                "peak_active_bytes",
                "peak active bytes",
                self.summary.peak_active_bytes,
            );
        }
        let peak = self.model.map(|_| self.summary);
        Ok(Finding::new(summary, (self.events, peak)))
    }

    fn record(&mut self, r: &Record) -> Result<(), BlameError> {
        if let Record::Mapping { .. } = r {
            if let Some(model) = &mut self.model {
                model.apply(r)?;
            }
            return Ok(());
        }
        self.events += 1;
        if let Some(model) = &mut self.model {
            model.apply(r)?;
            self.summary.observe(model.stats());
        }
        Ok(())
    }
}
