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
}

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

/// Every setting x strategy, each in its own child, in order. `on_done` sees each result.
pub fn run_matrix(
    options: &MatrixOptions,
    on_done: &mut dyn FnMut(JemallocSetting, &ChildReport),
) -> Result<Vec<(JemallocSetting, ChildReport)>> {
    let mut out = Vec::new();
    for &setting in &options.settings {
        for &strategy in &options.strategies {
            let report = run_one(&options.exe, setting, strategy, options.workload)?;
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
