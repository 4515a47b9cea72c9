//! `advise --routes K`: which call sites to route. The candidates are the sites blame charges
//! the most waste to (empty regions of their slabs and rounding) at the active peak; each
//! step runs the model with the sites chosen so far plus each remaining candidate (one engine
//! pass, a consumer per candidate) and keeps the one with the best score: the relative change
//! of the peak active bytes plus that of the mean resident bytes (lower is better). It stops
//! after `k` sites, or earlier when no candidate lowers the score.

use super::{evaluate_sets, RouteRule, Selector};
use crate::blame::{blame_stream_reopened, At, BlameError, BlameSpec, Charge};
use crate::engine::RunError;
use crate::process::{DecayClock, ProcessError, ProcessOptions, ProcessSummary};
use crate::sizeclass::AllocatorConfig;
use crate::trace::{Record, SiteTable};

/// Candidate sites at most.
pub const CANDIDATES: usize = 10;

/// One chosen site: the rule routing it and the model with it and every site before it.
#[derive(Clone, Debug)]
pub struct RouteStep {
    pub rule: RouteRule,
    /// The site's innermost frames, shortened.
    pub frames: String,
    pub summary: ProcessSummary,
}

/// The search's result: the baseline, then one step per chosen site.
#[derive(Clone, Debug)]
pub struct RouteSearch {
    pub baseline: ProcessSummary,
    pub steps: Vec<RouteStep>,
    /// Candidates considered.
    pub candidates: usize,
}

/// The score a step minimises (see the module documentation).
pub fn score(s: &ProcessSummary, base: &ProcessSummary) -> f64 {
    let rel = |v: f64, b: f64| if b > 0.0 { (v - b) / b } else { 0.0 };
    rel(s.peak_active_bytes as f64, base.peak_active_bytes as f64)
        + rel(s.mean_resident_bytes(), base.mean_resident_bytes())
}

/// Why the search failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Blame(#[from] BlameError),
    #[error(transparent)]
    Model(#[from] ProcessError),
    #[error("{0}")]
    Trace(String),
}

fn trace_error<E: std::fmt::Display>(e: RunError<ProcessError, E>) -> SearchError {
    match e {
        RunError::Trace(e) => SearchError::Trace(e.to_string()),
        RunError::Consumer(e) => SearchError::Model(e),
    }
}

/// Greedy search over blame's top sites. `open` gives the trace's records afresh (read once
/// for the sites, once for blame's two passes, once per step).
#[allow(clippy::too_many_arguments)]
pub fn search_routes<I, E>(
    open: impl Fn() -> Result<I, E>,
    k: usize,
    tcache: bool,
    config: AllocatorConfig,
    options: &ProcessOptions,
    cpus: u32,
    clock: DecayClock,
) -> Result<RouteSearch, SearchError>
where
    I: Iterator<Item = Result<Record, E>>,
    E: std::fmt::Display,
{
    let spec = BlameSpec {
        config,
        options: options.clone(),
        cpus,
        at: At::Peak,
    };
    let blame = blame_stream_reopened(&open, &spec).map_err(|e| match e {
        RunError::Trace(e) => SearchError::Trace(e.to_string()),
        RunError::Consumer(e) => SearchError::Blame(e),
    })?;
    let mut wasted: Vec<(u64, u32)> = blame
        .lines
        .iter()
        .filter_map(|(c, l)| match c {
            Charge::Site(s) => Some((l.empty_region_bytes + l.rounding_bytes, *s)),
            _ => None,
        })
        .filter(|&(w, _)| w > 0)
        .collect();
    wasted.sort_by(|a, b| b.cmp(a));
    let mut candidates: Vec<u32> = wasted.iter().take(CANDIDATES).map(|&(_, s)| s).collect();
    let n_candidates = candidates.len();
    let rule = |s: u32| RouteRule {
        selectors: vec![Selector::SiteId(s)],
        text: format!("site:#{s}"),
    };
    let records = || open().map_err(|e| SearchError::Trace(e.to_string()));
    let sites = super::sites_of(records()?).map_err(|e| SearchError::Trace(e.to_string()))?;
    let (mut chosen, mut steps) = (Vec::<RouteRule>::new(), Vec::new());
    let base_run = evaluate_sets(
        records()?,
        &sites,
        &[Vec::new()],
        tcache,
        config,
        options,
        cpus,
        clock,
    )
    .map_err(trace_error)?;
    let baseline = base_run[0];
    let mut best_score = 0.0;
    while steps.len() < k && !candidates.is_empty() {
        let sets: Vec<Vec<RouteRule>> = candidates
            .iter()
            .map(|&s| chosen.iter().cloned().chain([rule(s)]).collect())
            .collect();
        let runs = evaluate_sets(
            records()?,
            &sites,
            &sets,
            tcache,
            config,
            options,
            cpus,
            clock,
        )
        .map_err(trace_error)?;
        let (i, s) = runs
            .iter()
            .map(|r| score(r, &baseline))
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("a candidate");
        if s >= best_score {
            break;
        }
        best_score = s;
        let site = candidates.remove(i);
        chosen.push(rule(site));
        steps.push(RouteStep {
            rule: rule(site),
            frames: short_frames(&blame.sites, site),
            summary: runs[i],
        });
    }
    Ok(RouteSearch {
        baseline,
        steps,
        candidates: n_candidates,
    })
}

/// A site's three innermost frames, `;`-joined.
fn short_frames(sites: &SiteTable, site: u32) -> String {
    sites.get(site).map_or_else(
        || format!("site {site}"),
        |f| {
            f.iter()
                .take(3)
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(";")
        },
    )
}
