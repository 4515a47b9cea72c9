//! One build of jemalloc through the one-arena model with the what-if ledger (`replay
//! --preset a,b`, `--by-class`, `--charts`): several builds are several analyses of one
//! pass, each on a thread of its own. Its finding's result is the build's
//! [`BuildReplay`]; its summary carries the what-if table's own columns for one build.

use super::{Analysis, Finding};
use crate::engine::Consumer;
use crate::export::{Cell, Summary};
use crate::sim::ArenaModel;
use crate::trace::{Call, Record};
use crate::whatif::{Build, BuildReplay, BuildRun, ReplayError, ReplayOptions};
use anyhow::Result;

/// One build's replay: peaks, the breakdown at the active peak, the classes it used, and a
/// timeline every `options.every` calls.
pub struct BuildModel {
    run: BuildRun<ArenaModel>,
    calls: u64,
}

impl BuildModel {
    pub fn new(build: &Build, options: ReplayOptions) -> Result<Self> {
        let arena = ArenaModel::new(build.config).map_err(|e| ReplayError::Model {
            build: build.name.clone(),
            source: Box::new(e),
        })?;
        Ok(BuildModel {
            run: BuildRun::new(build, arena, options)?,
            calls: 0,
        })
    }
}

impl Analysis for BuildModel {
    fn record(&mut self, record: &Record) -> Result<()> {
        if let Record::Call(c) = record {
            self.calls += 1;
            self.run.call(self.calls, c)?;
        }
        Ok(())
    }

    fn calls(&mut self, first: u64, calls: &[Call]) -> Result<()> {
        self.run.calls(first, calls)?;
        self.calls = first + calls.len() as u64 - 1;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Finding> {
        let replay = self.run.finish();
        let mut summary = Summary::new(format!("build {} (one arena)", replay.build));
        summary
            .field("build", "build", replay.build.as_str())
            .field("events", "events", replay.events)
            .field(
                "peak_requested_bytes",
                "peak requested bytes",
                replay.peak.requested,
            )
            .field(
                "peak_allocated_bytes",
                "peak allocated bytes",
                replay.peak.allocated,
            )
            .field("peak_active_bytes", "peak active bytes", replay.peak.active)
            .field(
                "final_active_bytes",
                "final active bytes",
                replay.last.active,
            )
            .field(
                "internal_fragmentation",
                "internal fragmentation at the peak",
                Cell::Float(replay.internal_fragmentation(), 4),
            )
            .field(
                "external_fragmentation",
                "external fragmentation at the peak",
                Cell::Float(replay.external_fragmentation(), 4),
            )
            .field("peak_mapped_bytes", "peak mapped bytes", replay.peak.mapped);
        Ok(Finding::new(summary, replay))
    }
}

/// Every build of `builds` over `source` in one pass, one [`BuildModel`] each, their
/// replays in the order of `builds` (`progress` hears calls done, summed over builds): the
/// what-if table of `replay`, the report and the page.
pub fn build_replays(
    source: super::TraceSource<'_>,
    builds: &[Build],
    options: ReplayOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<BuildReplay>> {
    let analyses = builds
        .iter()
        .map(|b| Ok(Box::new(BuildModel::new(b, options)?) as Box<dyn Analysis>))
        .collect::<Result<Vec<_>>>()?;
    let n = builds.len() as u64;
    super::run_with_progress(source, analyses, &|calls| progress(calls * n))?
        .into_iter()
        .map(|f| {
            f.result::<BuildReplay>()
                .ok_or_else(|| anyhow::anyhow!("a build's finding is not its replay"))
        })
        .collect()
}
