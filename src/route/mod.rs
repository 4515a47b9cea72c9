//! The routing what-if (issue 36): what moving some allocations to dedicated arenas would
//! save, the fix jemalloc's maintainers give for fragmentation by long-lived objects. A rule
//! selects allocations by call site, request size or thread; each rule's allocations, their
//! reallocs and their frees go to one manual arena of their own, as a program would write it
//! (`arenas.create`, then `mallocx(size, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE)`, `dallocx`
//! with the same cache flag; `--route-tcache` keeps the thread's cache). The routed trace is
//! the same calls with those flags (`Call::mallocx_flags`), so the process model serves it as
//! it serves a recording of such a program, and the live child replays it with the same
//! flags (`--live`).
//!
//! Rules run cumulatively: the baseline, then the first rule, then the first two, ... each a
//! process model over the whole trace, all in one engine pass (each consumer routes the
//! records itself), so a row's saving is what its rule adds to the ones above it.

mod rules;
mod search;
mod table;

pub use rules::{parse_routes, RouteRule, Selector};
pub use search::{score, search_routes, RouteSearch, SearchError};
pub use table::{advise_routes, change_cells, routes_table};

use crate::analysis::{self, Analysis, Finding};
use crate::engine::{RecordConsumer, RunError};
use crate::export::Summary;
use crate::process::{DecayClock, ProcessError, ProcessOptions, ProcessRun, ProcessSummary};
use crate::sizeclass::AllocatorConfig;
use crate::trace::{Event, Record, SiteTable};
use std::sync::Arc;

/// The recorded index a rule's arena is named by (`MALLOCX_ARENA(ROUTE_ARENA + k)`): above
/// any automatic arena, so the model and the live child take it for a manual one.
pub(crate) const ROUTE_ARENA: u32 = 4000;
/// Rules at most (one manual arena each).
pub(crate) const MAX_RULES: usize = 64;
const TCACHE_NONE: u32 = 1 << 8;

/// Which rules' site selectors each site meets (bit `k`: rule `k`).
#[derive(Clone, Debug, Default)]
pub(crate) struct SiteMatches {
    by_site: Vec<u64>,
    /// A call without a site meets a rule only if the rule selects no site.
    no_site: u64,
}

impl SiteMatches {
    /// Evaluates every rule's site selectors on every site of `sites`.
    pub fn new(rules: &[RouteRule], sites: &SiteTable) -> SiteMatches {
        let mask = |frames: Option<&[crate::trace::Frame]>, id: Option<u32>| {
            rules
                .iter()
                .enumerate()
                .filter(|(_, r)| r.site_matches(frames, id))
                .fold(0u64, |m, (k, _)| m | 1 << k)
        };
        SiteMatches {
            by_site: (0..sites.len() as u32)
                .map(|s| mask(sites.get(s), Some(s)))
                .collect(),
            no_site: mask(None, None),
        }
    }
}

/// Routes a trace's records by the first `rules` rules.
#[derive(Clone, Debug)]
pub(crate) struct Router {
    rules: Arc<[RouteRule]>,
    sites: Arc<SiteMatches>,
    /// Rules in force (a prefix of `rules`).
    active: usize,
    tcache: bool,
    /// The rule (+1) each live object was routed by (0: none), by object id.
    routed: Vec<u8>,
    /// Objects each rule routed.
    pub counts: Vec<u64>,
    /// Instead of the rules: each allocation's lifetime class, in trace order (the lifetime
    /// reference, [`lifetime_classes`]), and the allocations seen so far.
    by_lifetime: Option<Arc<[u8]>>,
    allocs: usize,
}

impl Router {
    pub fn new(
        rules: Arc<[RouteRule]>,
        sites: Arc<SiteMatches>,
        active: usize,
        tcache: bool,
    ) -> Self {
        let n = rules.len();
        Router {
            rules,
            sites,
            active,
            tcache,
            routed: Vec::new(),
            counts: vec![0; n],
            by_lifetime: None,
            allocs: 0,
        }
    }

    /// Routes every allocation to the arena of its lifetime class (`classes`, one per
    /// allocation in trace order).
    pub(crate) fn by_lifetime(classes: Arc<[u8]>, tcache: bool) -> Self {
        let mut r = Router::new(Arc::from([]), Arc::default(), 0, tcache);
        r.counts = vec![0; LIFETIME_CLASSES];
        r.by_lifetime = Some(classes);
        r
    }

    /// The flags of rule `k`'s calls.
    fn flags(&self, k: usize) -> u32 {
        let arena = (ROUTE_ARENA + k as u32 + 1) << 20;
        if self.tcache {
            arena
        } else {
            arena | TCACHE_NONE
        }
    }

    /// `record` as the routed program would make it.
    pub fn route(&mut self, record: &Record) -> Record {
        let Record::Call(call) = record else {
            return record.clone();
        };
        let mut call = *call;
        let id = call.event.id() as usize;
        if id >= self.routed.len() {
            self.routed.resize(id + 1, 0);
        }
        let rule = match call.event {
            Event::Alloc { size, .. } => {
                let sites = match call.site {
                    Some(s) => self.sites.by_site.get(s as usize).copied().unwrap_or(0),
                    None => self.sites.no_site,
                };
                let k = match &self.by_lifetime {
                    Some(classes) => {
                        self.allocs += 1;
                        classes.get(self.allocs - 1).map(|&c| usize::from(c))
                    }
                    None => (0..self.active).find(|&k| {
                        sites & 1 << k != 0 && self.rules[k].call_matches(size, call.thread)
                    }),
                };
                self.routed[id] = k.map_or(0, |k| k as u8 + 1);
                if let Some(k) = k {
                    self.counts[k] += 1;
                }
                k
            }
            Event::Realloc { .. } => self.routed[id].checked_sub(1).map(usize::from),
            Event::Free { .. } => std::mem::take(&mut self.routed[id])
                .checked_sub(1)
                .map(usize::from),
        };
        if let Some(k) = rule {
            call.mallocx_flags = match call.event {
                // A free names no arena: only its cache flag.
                Event::Free { .. } => self.flags(k) & TCACHE_NONE,
                _ => self.flags(k),
            };
        }
        Record::Call(call)
    }
}

/// One row of the routing table: the rules in force and the model's figures.
#[derive(Clone, Debug)]
pub struct RouteRow {
    /// Rules in force: the first `rules` (0: the baseline).
    pub rules: usize,
    /// Objects the last rule routed (0 for the baseline).
    pub routed_objects: u64,
    pub summary: ProcessSummary,
}

/// What routing by `rules` does to a trace: the baseline and each cumulative prefix.
#[derive(Clone, Debug)]
pub struct RouteReport {
    pub rules: Vec<RouteRule>,
    pub rows: Vec<RouteRow>,
    /// Every object in the arena of its lifetime class ([`lifetime_classes`]), the reference
    /// routing by site is measured against; the objects per class.
    pub lifetime_reference: Option<SetResult>,
}

/// A process model fed routed records.
struct RoutedRun {
    router: Router,
    run: ProcessRun,
}

/// One rule set's routed process model as an analysis: its finding's result is the set's
/// [`SetResult`] (the model's summary and the objects each rule routed), its summary the
/// model's peak figures.
impl Analysis<ProcessError> for RoutedRun {
    fn record(&mut self, record: &Record) -> Result<(), ProcessError> {
        let routed = self.router.route(record);
        self.run.record(&routed)
    }

    fn finish(self: Box<Self>) -> Result<Finding, ProcessError> {
        let rules = self.router.counts.len();
        let result: SetResult = (self.run.finish().summary, self.router.counts);
        let mut summary = Summary::new(format!("{rules} routing rules"));
        summary
            .field("rules", "rules", rules as u64)
            .field(
                "peak_active_bytes",
                "peak active bytes",
                result.0.peak_active_bytes,
            )
            .field(
                "peak_resident_bytes",
                "peak resident bytes",
                result.0.peak_resident_bytes,
            )
            .field(
                "routed_objects",
                "objects routed",
                result.1.iter().sum::<u64>(),
            );
        Ok(Finding::new(summary, result))
    }
}

/// The sites of a trace (its `Site` records), the first of a routing what-if's two passes.
pub fn sites_of<E>(records: impl Iterator<Item = Result<Record, E>>) -> Result<SiteTable, E> {
    let mut sites = SiteTable::new();
    for r in records {
        if let Record::Site { id, frames } = r? {
            // The readers check that sites are dense.
            let _ = sites.push(id, frames);
        }
    }
    Ok(sites)
}

/// The model over `records` for the baseline and each prefix of `rules` (`sites`: the
/// trace's, [`sites_of`]), and with `lifetimes` ([`lifetime_classes`]) the lifetime
/// reference.
#[allow(clippy::too_many_arguments)]
pub(crate) fn evaluate<E>(
    records: impl Iterator<Item = Result<Record, E>>,
    sites: &SiteTable,
    rules: &[RouteRule],
    lifetimes: Option<Arc<[u8]>>,
    tcache: bool,
    config: AllocatorConfig,
    options: &ProcessOptions,
    cpus: u32,
    clock: DecayClock,
) -> Result<RouteReport, RunError<ProcessError, E>> {
    let sets: Vec<Vec<RouteRule>> = (0..=rules.len()).map(|k| rules[..k].to_vec()).collect();
    let mut routers = routers_for(sites, &sets, tcache);
    let bound = lifetimes.is_some();
    routers.extend(lifetimes.map(|c| Router::by_lifetime(c, tcache)));
    let mut runs = run_routers(records, routers, config, options, cpus, clock)?;
    let lifetime_reference = bound.then(|| runs.pop().expect("the reference run"));
    let rows = runs
        .into_iter()
        .enumerate()
        .map(|(k, (summary, counts))| RouteRow {
            rules: k,
            routed_objects: k.checked_sub(1).map_or(0, |j| counts[j]),
            summary,
        })
        .collect();
    Ok(RouteReport {
        rules: rules.to_vec(),
        rows,
        lifetime_reference,
    })
}

/// The model over `records` once per rule set of `sets` (one engine pass).
#[allow(clippy::too_many_arguments)]
pub(crate) fn evaluate_sets<E>(
    records: impl Iterator<Item = Result<Record, E>>,
    sites: &SiteTable,
    sets: &[Vec<RouteRule>],
    tcache: bool,
    config: AllocatorConfig,
    options: &ProcessOptions,
    cpus: u32,
    clock: DecayClock,
) -> Result<Vec<ProcessSummary>, RunError<ProcessError, E>> {
    let routers = routers_for(sites, sets, tcache);
    let runs = run_routers(records, routers, config, options, cpus, clock)?;
    Ok(runs.into_iter().map(|(s, _)| s).collect())
}

/// A router per rule set.
fn routers_for(sites: &SiteTable, sets: &[Vec<RouteRule>], tcache: bool) -> Vec<Router> {
    sets.iter()
        .map(|rules| {
            let matches = Arc::new(SiteMatches::new(rules, sites));
            Router::new(rules.as_slice().into(), matches, rules.len(), tcache)
        })
        .collect()
}

/// A rule set's summary and the objects each of its rules routed.
pub(crate) type SetResult = (ProcessSummary, Vec<u64>);

/// Each router's model summary and the objects each of its rules routed (one engine pass).
fn run_routers<E>(
    records: impl Iterator<Item = Result<Record, E>>,
    routers: Vec<Router>,
    config: AllocatorConfig,
    options: &ProcessOptions,
    cpus: u32,
    clock: DecayClock,
) -> Result<Vec<SetResult>, RunError<ProcessError, E>> {
    let runs = routers
        .into_iter()
        .map(|router| {
            let run = ProcessRun::new(config, options, cpus, clock, u64::MAX, None)?;
            Ok(Box::new(RoutedRun { router, run }) as Box<dyn Analysis<ProcessError>>)
        })
        .collect::<Result<Vec<_>, ProcessError>>()
        .map_err(RunError::Consumer)?;
    // One pass, one analysis per rule set, each on a thread of its own.
    Ok(analysis::results(analysis::run_stream(
        records,
        runs,
        &|_| {},
    )?))
}

/// Lifetime classes of the lifetime reference: freed within 1% of the trace's calls, freed
/// later, never freed.
pub(crate) const LIFETIME_CLASSES: usize = 3;

/// Each allocation's lifetime class, in trace order (a realloc keeps its object's lifetime
/// going): every object in the arena of how long it actually lives, the reference routing by
/// call site is measured against (not a proven bound: a finer split can do better).
pub fn lifetime_classes<E>(records: impl Iterator<Item = Result<Record, E>>) -> Result<Vec<u8>, E> {
    let (mut born, mut life): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
    let mut alloc_of: Vec<usize> = Vec::new();
    let mut n = 0u64;
    for r in records {
        let Record::Call(c) = r? else { continue };
        n += 1;
        match c.event {
            Event::Alloc { id, .. } => {
                let id = id as usize;
                if id >= alloc_of.len() {
                    alloc_of.resize(id + 1, usize::MAX);
                }
                alloc_of[id] = born.len();
                born.push(n);
                life.push(u64::MAX);
            }
            Event::Free { id } => {
                if let Some(&a) = alloc_of.get(id as usize).filter(|&&a| a != usize::MAX) {
                    life[a] = n - born[a];
                    alloc_of[id as usize] = usize::MAX;
                }
            }
            Event::Realloc { .. } => {}
        }
    }
    let short = (n / 100).max(1);
    Ok(life
        .into_iter()
        .map(|l| match l {
            u64::MAX => 2,
            l if l < short => 0,
            _ => 1,
        })
        .collect())
}

/// `records` routed by every rule (for a live check of the routed program).
pub(crate) fn route_all(records: &[Record], rules: &[RouteRule], tcache: bool) -> Vec<Record> {
    let sites = sites_of(
        records
            .iter()
            .map(|r| Ok::<_, std::convert::Infallible>(r.clone())),
    )
    .unwrap_or_default();
    let matches = Arc::new(SiteMatches::new(rules, &sites));
    let mut router = Router::new(rules.into(), matches, rules.len(), tcache);
    records.iter().map(|r| router.route(r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Call;

    /// 300 calls: object 0 freed at once (lifetime 1 < 3, 1% of 300: short), object 1
    /// freed 200 calls later (longer), object 2 never freed; hand-derived.
    #[test]
    fn lifetime_classes_by_hand() {
        let mut r = vec![
            Event::Alloc {
                id: 0,
                size: 8,
                align: 0,
            },
            Event::Free { id: 0 },
            Event::Alloc {
                id: 1,
                size: 8,
                align: 0,
            },
            Event::Alloc {
                id: 2,
                size: 8,
                align: 0,
            },
        ];
        for i in 0..198 {
            r.push(Event::Alloc {
                id: 3 + i,
                size: 8,
                align: 0,
            });
        }
        r.push(Event::Free { id: 1 });
        for i in 0..97 {
            r.push(Event::Free { id: 3 + i });
        }
        assert_eq!(r.len(), 300);
        let records = r
            .into_iter()
            .map(|e| Ok::<_, std::convert::Infallible>(Record::Call(Call::plain(e))));
        let classes = lifetime_classes(records).unwrap();
        assert_eq!(classes[..3], [0, 1, 2]);
    }
}
