//! The sections a page carries on request (`--with advise,routes,builds`): advise's table, the
//! routing search's table (or why there is none), every preset build.

use super::{open, ViewError, ViewSpec};
use crate::analysis::{build_replays, TraceSource};
use crate::engine::RunError;
use crate::export::Table;
use crate::whatif::{whatif_table, Build, ReplayOptions};
use std::path::Path;

/// Sites `--with routes` searches for at most (`advise --routes`'s default K).
pub const ROUTES: usize = 5;

/// A section a page can carry on request (`--with advise,routes,builds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    /// `fragsim advise`'s table: the built-in grid of run-time options through the process
    /// model (no live check), ranked by peak resident bytes.
    Advise,
    /// `fragsim advise --routes 5 --no-live`'s table: which call sites to route to dedicated
    /// arenas (needs a trace with sites).
    Routes,
    /// Every preset build through the one-arena model (`replay --preset ...`).
    Builds,
}

impl crate::choice::Choice for Extra {
    fn all() -> &'static [Self] {
        &[Extra::Advise, Extra::Routes, Extra::Builds]
    }

    fn name(self) -> &'static str {
        match self {
            Extra::Advise => "advise",
            Extra::Routes => "routes",
            Extra::Builds => "builds",
        }
    }

    fn help(self) -> &'static str {
        match self {
            Extra::Advise => {
                "advise's table: the built-in grid of run-time options, ranked (no live check)"
            }
            Extra::Routes => {
                "advise --routes 5's table: call sites to route to dedicated arenas (no live check; needs sites)"
            }
            Extra::Builds => "every preset build through the one-arena model, side by side",
        }
    }
}

impl std::fmt::Display for Extra {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::choice::Choice::name(*self))
    }
}

/// One section below the page's own tables.
#[derive(Clone, Debug)]
pub enum Section {
    Table(Table),
    /// A heading and a sentence, where a table cannot be made.
    Note {
        title: String,
        text: String,
    },
}

fn run_error<E: ToString>(e: RunError<E, crate::trace::TraceError>) -> ViewError {
    match e {
        RunError::Trace(e) => ViewError::Trace(e),
        RunError::Consumer(e) => ViewError::Model(e.to_string()),
    }
}

/// One section asked for with `--with`; `name` is the page's.
pub(super) fn extra(
    path: &Path,
    spec: &ViewSpec,
    what: Extra,
    name: &str,
) -> Result<Section, ViewError> {
    match what {
        Extra::Builds => builds(path).map(Section::Table),
        Extra::Advise => advise(path, spec).map(Section::Table),
        Extra::Routes => routes(path, spec, name),
    }
}

fn builds(path: &Path) -> Result<Table, ViewError> {
    let builds: Vec<Build> = crate::sizeclass::Preset::ALL
        .iter()
        .map(|p| Build::new(p.name(), p.config()))
        .collect();
    let replays = build_replays(
        TraceSource::File(path),
        &builds,
        ReplayOptions { every: None },
        &|_| {},
    )
    .map_err(|e| ViewError::Model(e.to_string()))?;
    Ok(whatif_table(
        "every preset build, one arena without thread cache (fragsim replay --preset ...)",
        &replays,
    ))
}

fn advise(path: &Path, spec: &ViewSpec) -> Result<Table, ViewError> {
    let machine = crate::advise::ModelMachine::with_cpus(spec.cpus);
    let grid = crate::advise::default_grid();
    let grid = spec
        .recorded
        .as_ref()
        .and_then(|(r, keep_narenas)| crate::advise::rebase(&grid, r, *keep_narenas))
        .map_or(grid, |(rebased, _)| rebased);
    let advice = crate::advise::advise_stream(
        TraceSource::File(path).scaled(spec.time_scale()),
        &grid,
        machine,
        &crate::progress::Progress::default(),
    )
    .map_err(run_error)?;
    Ok(crate::advise::advice_table(
        &advice,
        "run-time options through the process model, ranked by peak resident bytes (fragsim advise --no-live)",
        &[],
    ))
}

/// `advise --routes 5 --no-live` on the trace as it is (its times unscaled, the linked build,
/// default options, seed 0), or a sentence where the trace has no call sites.
fn routes(path: &Path, spec: &ViewSpec, name: &str) -> Result<Section, ViewError> {
    let title = "call sites to route to dedicated arenas (fragsim advise --routes)".to_string();
    if crate::route::sites_of(open(path, 1.0)()?)?.is_empty() {
        return Ok(Section::Note {
            title,
            text: "Routing needs call sites, and this trace has none: record it with --stacks."
                .into(),
        });
    }
    let (found, config) = crate::route::advise_routes(open(path, 1.0), ROUTES, spec.cpus, 0)
        .map_err(|e| ViewError::Model(e.to_string()))?;
    let mut table = crate::route::routes_table(&found, name, &config);
    if found.steps.is_empty() {
        table
            .title
            .push_str(": no site's routing lowers the score, nothing to route");
    }
    Ok(Section::Table(table))
}
