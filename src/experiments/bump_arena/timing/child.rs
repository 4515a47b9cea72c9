//! The parent's side: one fresh child process per (jemalloc setting, strategy).

use super::{ChildReport, JemallocSetting, TimedStrategy, TimingError, Workload, MALLOC_CONF_ENV};
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to run.
#[derive(Clone, Debug)]
pub struct MatrixOptions {
    /// The fragsim executable; its hidden `bump-arena --timing-child` mode does one pair.
    pub exe: PathBuf,
    /// Each child's workload (its runs: the first is cold, the rest warm).
    pub workload: Workload,
    pub settings: Vec<JemallocSetting>,
    pub strategies: Vec<TimedStrategy>,
    /// Builds of the reused arena's child when more than `workload.runs`: it grows in builds 2
    /// and 3, so 6 keep its warm median a steady-state build.
    pub reused_runs: usize,
}

/// Builds per `Vec<Vec<i32>>` child: one cold, one warm. With decay on the wall clock a warm
/// build may take fresh pages while the previous build's freed slabs are still dirty (the
/// statistics show them dirty, not purged), so a child of six builds held up to three builds'
/// worth (1.3 GB at the seed's size); two builds per child bound it at two.
pub(crate) const GENERAL_BUILDS: usize = 2;

impl MatrixOptions {
    /// Every setting and strategy, `runs` builds per child (at least 2: one cold, one warm).
    pub fn all(exe: &Path, vectors: u64, elements: u64, runs: usize) -> Self {
        MatrixOptions {
            exe: exe.to_path_buf(),
            workload: Workload {
                vectors,
                elements,
                runs: runs.max(2),
            },
            settings: JemallocSetting::ALL.to_vec(),
            strategies: TimedStrategy::ALL.to_vec(),
            reused_runs: 0,
        }
    }

    /// The children one strategy runs as: (how many, builds each). `Vec<Vec<i32>>` runs as
    /// children of `GENERAL_BUILDS` (2) builds, as many as make about `workload.runs` builds.
    pub fn children(&self, strategy: TimedStrategy) -> (usize, usize) {
        let runs = self.workload.runs;
        match strategy {
            TimedStrategy::General => ((runs / GENERAL_BUILDS).max(1), GENERAL_BUILDS),
            TimedStrategy::Reused => (1, runs.max(self.reused_runs)),
            _ => (1, runs),
        }
    }
}

/// Runs one pair in a child process and checks that jemalloc took the setting.
pub fn run_one(
    exe: &Path,
    setting: JemallocSetting,
    strategy: TimedStrategy,
    workload: Workload,
) -> Result<ChildReport> {
    workload.validate()?;
    let what = format!("{} / {}", setting.key(), strategy.key());
    let mut command = Command::new(exe);
    match setting.malloc_conf() {
        Some(conf) => command.env(MALLOC_CONF_ENV, conf),
        None => command.env_remove(MALLOC_CONF_ENV),
    };
    command
        .args(["bump-arena", "--timing-child", strategy.key()])
        .args(["--vectors", &workload.vectors.to_string()])
        .args(["--elements", &workload.elements.to_string()])
        .args(["--runs", &workload.runs.to_string()]);
    // Stopped with the parent if the run is interrupted (Ctrl-C).
    let output = crate::cleanup::output(&mut command).map_err(|e| TimingError::ChildFailed {
        what: what.clone(),
        message: format!("cannot run '{}': {e}", exe.display()),
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(TimingError::ChildFailed {
            what,
            message: stderr.lines().next().unwrap_or("no message").to_string(),
        }
        .into());
    }
    let report: ChildReport =
        serde_json::from_slice(&output.stdout).map_err(|e| TimingError::BadChildOutput {
            what: what.clone(),
            message: e.to_string(),
        })?;
    if report.strategy != strategy
        || report.runs.len() != workload.runs
        || !setting.applied(&report.jemalloc)
    {
        return Err(TimingError::SettingNotApplied {
            what,
            conf: setting.malloc_conf().unwrap_or("(none)").to_string(),
        }
        .into());
    }
    Ok(report)
}

/// Every setting x strategy in its own children ([`MatrixOptions::children`]), in order; a
/// strategy's children's runs are kept in one report, each numbered within its process (run
/// 1 of each is cold). `on_done` sees each (setting, strategy) once its children are done.
pub fn run_matrix(
    options: &MatrixOptions,
    on_done: &mut dyn FnMut(JemallocSetting, &ChildReport),
) -> Result<Vec<(JemallocSetting, ChildReport)>> {
    // The runs asked for are refused before any child runs (not only a strategy's children).
    options.workload.validate()?;
    let mut out = Vec::new();
    for &setting in &options.settings {
        for &strategy in &options.strategies {
            let (children, runs) = options.children(strategy);
            let workload = Workload {
                runs,
                ..options.workload
            };
            let mut report = run_one(&options.exe, setting, strategy, workload)?;
            for _ in 1..children {
                let more = run_one(&options.exe, setting, strategy, workload)?;
                report.runs.extend(more.runs);
            }
            on_done(setting, &report);
            out.push((setting, report));
        }
    }
    Ok(out)
}

/// The whole comparison: every child, then the seed's C++ program (`cxx_script`, if given) on
/// the same workload and run count.
pub fn measure_all(
    options: &MatrixOptions,
    cxx_script: Option<&Path>,
    on_done: &mut dyn FnMut(JemallocSetting, &ChildReport),
) -> Result<super::TimingRun> {
    let children = run_matrix(options, on_done)?;
    let cxx = match cxx_script {
        Some(script) => {
            let w = options.workload;
            super::run_cxx(script, w.vectors, w.elements, w.runs)?
        }
        None => super::CxxOutput::default(),
    };
    Ok(super::TimingRun { children, cxx })
}
