//! The live check of a recommended setting: the same records through the real jemalloc with
//! that `MALLOC_CONF`, one thread per trace thread in a baton child
//! ([`crate::check::process::compare_process_live`], as `replay --process --live`), compared
//! with the model every K events. 5.3.1 settings run on the linked jemalloc, 5.3.0 settings
//! on Debian's `libjemalloc2` preloaded (as `--system-jemalloc`); other builds have no live
//! jemalloc here and are not run. Settings whose decay runs on the clock are not exact (jemalloc
//! decays on the wall clock, its checks randomly spaced): they are not run here but marked
//! `approximate`, with the command that compares their resident memory live.

use super::{Advice, AdviseError, Setting};
use crate::analysis::TraceSource;
use crate::check::process::{
    compare_process_live_with, LiveRun, ProcessAllocator, ProcessLiveComparison,
};
use crate::progress::Progress;
use crate::sizeclass::Preset;
use std::path::{Path, PathBuf};

/// One live run, predicted beside measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LiveOutcome {
    /// The jemalloc that ran (`5.3.1`, `5.3.0`).
    pub version: String,
    /// The `MALLOC_CONF` the child ran with.
    pub malloc_conf: String,
    pub every: u64,
    pub run: ProcessLiveComparison,
}

impl LiveOutcome {
    pub fn passed(&self) -> bool {
        self.run.comparison.is_exact()
    }
}

/// The `live_check` of one setting.
#[derive(Clone, Debug, serde::Serialize)]
pub enum LiveCheck {
    /// Not recommended, `--no-live`, or no live jemalloc runs its build (the reason).
    NotRun(String),
    /// Decay on the clock: no exact check exists; how to compare resident live instead.
    Approximate(String),
    Ran(LiveOutcome),
}

impl LiveCheck {
    /// `pass`, `fail`, `approximate` or `not-run`, as the table's column says it.
    pub fn word(&self) -> &'static str {
        match self {
            LiveCheck::NotRun(_) => "not-run",
            LiveCheck::Approximate(_) => "approximate",
            LiveCheck::Ran(o) if o.passed() => "pass",
            LiveCheck::Ran(_) => "fail",
        }
    }

    pub fn failed(&self) -> bool {
        self.word() == "fail"
    }
}

/// The jemalloc that runs `setting` live, or why none does here: the linked one, Debian's
/// 5.3.0 library, or a deployed build's library as `scripts/build-jemalloc.sh NAME` leaves it
/// (`builds/NAME/libjemalloc.so.2`).
fn allocator_for(setting: &Setting, plan: &LivePlan) -> Result<ProcessAllocator, String> {
    let debian = &plan.debian_jemalloc;
    let linked = crate::live::Api::linked()
        .config()
        .map_err(|e| e.to_string())?;
    if setting.config() == linked {
        return Ok(ProcessAllocator::Linked);
    }
    if setting.preset == Preset::V5_3_0 {
        if debian.is_file() {
            return Ok(ProcessAllocator::System(debian.to_path_buf()));
        }
        return Err(format!(
            "jemalloc 5.3.0 runs live only with Debian's libjemalloc2 at {}, which is not installed",
            debian.display()
        ));
    }
    let built = plan
        .builds
        .join(setting.preset.name())
        .join("libjemalloc.so.2");
    if built.is_file() {
        return Ok(ProcessAllocator::System(built));
    }
    let name = setting.preset.name();
    Err(format!(
        "no live jemalloc runs build '{name}' here: build it with scripts/build-jemalloc.sh {name} (it looks in {})",
        plan.builds.display()
    ))
}

/// Where `scripts/build-jemalloc.sh` leaves deployed builds for a fragsim built at `exe`:
/// `target/jemalloc` beside `target/release/fragsim`.
pub fn builds_beside(exe: &Path) -> PathBuf {
    exe.parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."))
        .join("jemalloc")
}

/// How the live checks run.
#[derive(Clone, Debug)]
pub struct LivePlan {
    /// The fragsim executable (the child is `fragsim __process-live-child`).
    pub exe: PathBuf,
    /// Compare every K events (and after the last); `None`: as `replay --live` spaces them
    /// (`live::arena_replay::default_live_every` of the trace's events).
    pub every: Option<u64>,
    /// Debian's jemalloc 5.3.0 (`crate::validate::DEBIAN_JEMALLOC`).
    pub debian_jemalloc: PathBuf,
    /// Where deployed builds' libraries are (`NAME/libjemalloc.so.2`, as
    /// `scripts/build-jemalloc.sh` writes them under `target/jemalloc`).
    pub builds: PathBuf,
    /// Told of each check's records as the model beside the child takes them.
    pub progress: Progress,
}

/// Live-checks one setting on `trace` (a file, which the child and the model beside it
/// stream, or records in memory).
pub fn verify<'a>(
    trace: impl Into<TraceSource<'a>>,
    setting: &Setting,
    cpus: u32,
    plan: &LivePlan,
) -> Result<LiveCheck, AdviseError> {
    if setting.on_clock() {
        return Ok(LiveCheck::Approximate(format!(
            "{} on the clock is not exact; compare resident live with: fragsim replay TRACE --process --live --honour-clock --runs 5 --cpus {cpus} --malloc-conf '{}'",
            if setting.clock_gc() { "the cache GC" } else { "decay" },
            setting.exact_conf(cpus)
        )));
    }
    let allocator = match allocator_for(setting, plan) {
        Ok(a) => a,
        Err(why) => return Ok(LiveCheck::NotRun(why)),
    };
    let options = setting.options_for(cpus);
    let every = plan.every.unwrap_or(1);
    let run = compare_process_live_with(
        &plan.exe,
        &allocator,
        trace,
        &options,
        LiveRun {
            every,
            keep: 5,
            dump: None,
        },
        &plan.progress,
    )
    .map_err(|e| AdviseError::Live {
        setting: setting.label(),
        message: format!("{e:#}"),
    })?;
    Ok(LiveCheck::Ran(LiveOutcome {
        version: run.version.clone(),
        malloc_conf: setting.exact_conf(cpus),
        every,
        run,
    }))
}

/// One check per result: the recommended settings run live (one after the other: each child
/// has one thread per trace thread), the others `not-run`.
pub fn verify_recommended<'a>(
    trace: impl Into<TraceSource<'a>>,
    advice: &Advice,
    plan: Option<&LivePlan>,
) -> Result<Vec<LiveCheck>, AdviseError> {
    let trace = trace.into();
    let recommended = advice.recommended();
    // Spaced as `replay --live` by default: every event of a 3 M-event trace took 1008 s.
    let spaced = plan.map(|p| LivePlan {
        every: Some(
            p.every
                .unwrap_or_else(|| crate::check::arena_replay::default_live_every(advice.events)),
        ),
        ..p.clone()
    });
    let plan = spaced.as_ref();
    advice
        .results
        .iter()
        .enumerate()
        .map(|(i, r)| match plan {
            None => Ok(LiveCheck::NotRun("--no-live".into())),
            Some(_) if !recommended.contains(&i) => Ok(LiveCheck::NotRun("not recommended".into())),
            Some(plan) => verify(trace, &r.setting, advice.cpus, plan),
        })
        .collect()
}
