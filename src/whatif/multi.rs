//! Every build of a what-if run from one read of the trace: the engine (`crate::engine`) feeds
//! each batch of events to every build's model, each build on a thread of its own.

use super::builds::Build;
use super::replay::{BuildReplay, BuildRun, ReplayError, ReplayOptions, WhatifModel};
use crate::engine::{run, RunError};
use crate::trace::{Call, Event, Record};

/// Replays the events `open_events` yields under every build; rows keep the order of
/// `builds`. `progress` hears events done, summed over builds.
pub fn replay_builds<A, I, E>(
    builds: &[Build],
    new_arena: impl Fn(&Build) -> Result<A, ReplayError> + Sync,
    open_events: impl Fn() -> Result<I, ReplayError> + Sync,
    options: ReplayOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<BuildReplay>, ReplayError>
where
    A: WhatifModel + Send,
    I: IntoIterator<Item = Result<Event, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut runs = new_runs(builds, new_arena, options)?;
    let records = open_events()?
        .into_iter()
        .map(|e| e.map(|e| Record::Call(Call::plain(e))));
    let n = builds.len() as u64;
    run(records, &mut runs, &|done| progress(done * n)).map_err(run_error)?;
    Ok(runs.into_iter().map(BuildRun::finish).collect())
}

fn new_runs<A: WhatifModel>(
    builds: &[Build],
    new_arena: impl Fn(&Build) -> Result<A, ReplayError>,
    options: ReplayOptions,
) -> Result<Vec<BuildRun<A>>, ReplayError> {
    builds
        .iter()
        .map(|build| BuildRun::new(build, new_arena(build)?, options))
        .collect()
}

fn run_error<T: std::error::Error + Send + Sync + 'static>(
    e: RunError<ReplayError, T>,
) -> ReplayError {
    match e {
        RunError::Trace(e) => ReplayError::Trace(Box::new(e)),
        RunError::Consumer(e) => e,
    }
}
