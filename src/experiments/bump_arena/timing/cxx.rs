//! The seed's own C++ benchmark (`scripts/seed-pmr.sh`), run and parsed.

use super::TimingError;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;

/// One run of `scripts/seed-pmr.cpp`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CxxRun {
    /// "glibc" or `"jemalloc <version>"`, as the program found it (not as it was asked for).
    pub allocator: String,
    /// std, monotonic or nofree.
    pub strategy: String,
    pub vectors: u64,
    pub elements: u64,
    pub run: u32,
    pub build_us: f64,
    pub reset_us: f64,
    pub build_faults: u64,
    pub reset_faults: u64,
    /// jemalloc's dirty pages (all arenas) after the run; -1 under glibc.
    #[serde(default)]
    pub jemalloc_pdirty: i64,
    /// jemalloc's mapped bytes after the run; -1 under glibc.
    #[serde(default)]
    pub jemalloc_mapped: i64,
}

/// What the script printed: runs, and the parts it skipped with the reason.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CxxOutput {
    pub runs: Vec<CxxRun>,
    pub skipped: Vec<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Line {
    Run(CxxRun),
    Skip { skip: String },
}

/// Parses the script's stdout: one JSON object a line, either a run or `{"skip": reason}`.
pub fn parse_cxx_lines(text: &str) -> Result<CxxOutput, TimingError> {
    let mut out = CxxOutput::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Line>(line) {
            Ok(Line::Run(run)) => out.runs.push(run),
            Ok(Line::Skip { skip }) => out.skipped.push(skip),
            Err(e) => {
                return Err(TimingError::Cxx {
                    script: "output".into(),
                    message: format!("line {}: {e}: '{line}'", n + 1),
                })
            }
        }
    }
    Ok(out)
}

/// Runs `script VECTORS ELEMENTS RUNS` (bash) and parses what it prints.
pub fn run_cxx(script: &Path, vectors: u64, elements: u64, runs: usize) -> Result<CxxOutput> {
    let err = |message: String| TimingError::Cxx {
        script: script.display().to_string(),
        message,
    };
    // Stopped with the parent if the run is interrupted (Ctrl-C).
    let output = crate::cleanup::output(Command::new("bash").arg(script).args([
        vectors.to_string(),
        elements.to_string(),
        runs.to_string(),
    ]))
    .map_err(|e| err(format!("cannot run bash: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("no message").to_string();
        return Err(err(format!("exit {}: {last}", output.status)).into());
    }
    parse_cxx_lines(&String::from_utf8_lossy(&output.stdout)).map_err(|e| err(e.to_string()).into())
}
