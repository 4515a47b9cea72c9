//! Every build of a what-if run, replayed in parallel (one rayon task per build, each reading
//! the trace on its own).

use super::builds::Build;
use super::replay::{replay_build, ArenaModel, BuildReplay, ReplayError, ReplayOptions};
use crate::trace::Event;
use rayon::prelude::*;

/// Replays the events `open_events` yields under every build, in parallel; rows keep the
/// order of `builds`. `progress` hears events done, summed over builds.
pub fn replay_builds<A, I, E>(
    builds: &[Build],
    new_arena: impl Fn(&Build) -> Result<A, ReplayError> + Sync,
    open_events: impl Fn() -> Result<I, ReplayError> + Sync,
    options: ReplayOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<BuildReplay>, ReplayError>
where
    A: ArenaModel,
    I: IntoIterator<Item = Result<Event, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    builds
        .par_iter()
        .map(|build| {
            let arena = new_arena(build)?;
            replay_build(build, arena, open_events()?, options, progress)
        })
        .collect()
}
