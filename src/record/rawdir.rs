//! A folder of raw files (`raw.<pid>`, one per recorded process): the children's files of a
//! recording, and `record --convert`, which converts a folder a recording left behind (a
//! second interrupt, `--keep-raw`).

use super::raw::{parse, RawProcess, FLAG_STACKS};
use super::{convert_into, RecordError, RecordedTrace};
use crate::trace::{Fields, TraceError};
use std::path::{Path, PathBuf};

/// What the user is told about the raw files an interrupted recording leaves in `dir`.
pub fn kept_note(dir: &Path, out: &Path) -> String {
    format!(
        "fragsim: stopped; the recorder's raw files are kept in '{}': `fragsim record --convert {} -o {}` writes the trace from them",
        dir.display(),
        shell_quote(dir),
        shell_quote(out)
    )
}

/// `path` as one shell word (in single quotes unless it needs none).
fn shell_quote(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:=@%".contains(&b));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The raw files of the processes other than `root` (`--follow-forks`), by pid, indexed, with
/// their traces' paths (`out.<pid>`).
pub(super) fn parse_children(
    dir: &Path,
    root: u64,
    out: &Path,
) -> Result<Vec<(u64, RawProcess, PathBuf)>, RecordError> {
    let mut parsed = Vec::new();
    for (pid, raw) in raw_files(dir)?.into_iter().filter(|(p, _)| *p != root) {
        let path = child_trace(out, pid)?;
        parsed.push((pid, parse(&raw)?, path));
    }
    Ok(parsed)
}

/// `out.<pid>`, the trace of child `pid`, unless that is a file of the user's (an existing
/// file that is not a fragsim trace: `-o` was checked before the program ran, this name
/// could not be).
fn child_trace(out: &Path, pid: u64) -> Result<PathBuf, RecordError> {
    let path = PathBuf::from(format!("{}.{pid}", out.display()));
    let users = std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() > 0)
        && !crate::trace::is_binary_trace(&path);
    if users {
        return Err(RecordError::RawDir(RawDirError::WouldReplace { path }));
    }
    Ok(path)
}

/// The raw files in `dir`, by pid.
fn raw_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, RecordError> {
    let entries = std::fs::read_dir(dir).map_err(|e| TraceError::Input {
        file: dir.display().to_string(),
        what: e.to_string(),
    })?;
    let mut files: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid: u64 = name.strip_prefix("raw.")?.parse().ok()?;
            Some((pid, e.path()))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Why a folder cannot be converted.
#[derive(Debug, thiserror::Error)]
pub enum RawDirError {
    #[error("'{}' holds no raw file of the recorder (raw.<pid>)", dir.display())]
    Empty { dir: PathBuf },
    #[error("the trace of a child process would replace '{}', an existing file that is not a fragsim trace (record with another -o)", path.display())]
    WouldReplace { path: PathBuf },
    #[error("'{}' holds the raw files of {count} processes none of which started the others: convert one with `fragsim record --convert` on a folder holding it alone", dir.display())]
    NoRoot { dir: PathBuf, count: usize },
}

/// The recorded program's pid among the raw files of `dir`: the one process whose parent
/// recorded nothing (the others are its children, recorded with `--follow-forks`).
fn root_of(dir: &Path, files: &[(u64, RawProcess)]) -> Result<u64, RecordError> {
    if files.is_empty() {
        return Err(RecordError::RawDir(RawDirError::Empty {
            dir: dir.to_path_buf(),
        }));
    }
    let parent = |p: &RawProcess| p.images.first().map(|i| i.ppid);
    let roots: Vec<u64> = files
        .iter()
        .filter(|(_, p)| !files.iter().any(|(other, _)| parent(p) == Some(*other)))
        .map(|(pid, _)| *pid)
        .collect();
    match roots[..] {
        [root] => Ok(root),
        _ => Err(RecordError::RawDir(RawDirError::NoRoot {
            dir: dir.to_path_buf(),
            count: files.len(),
        })),
    }
}

/// Converts the raw files a recording left in `dir`: the program's into `out`, its children's
/// (`--follow-forks`) into `out.<pid>`; the program's trace first.
pub fn convert_dir(dir: &Path, out: &Path) -> Result<Vec<RecordedTrace>, RecordError> {
    let mut files = Vec::new();
    for (pid, raw) in raw_files(dir)? {
        files.push((pid, parse(&raw)?));
    }
    let root = root_of(dir, &files)?;
    files.sort_by_key(|(pid, _)| (*pid != root, *pid));
    let mut traces = Vec::new();
    for (pid, process) in files {
        let stacks = process
            .images
            .first()
            .is_some_and(|i| i.flags & FLAG_STACKS != 0);
        let fields = Fields {
            threads: true,
            times: true,
            sites: stacks,
        };
        let path = if pid == root {
            out.to_path_buf()
        } else {
            child_trace(out, pid)?
        };
        let name = dir.join(format!("raw.{pid}")).display().to_string();
        traces.push(convert_into(&path, fields, pid, |sink| {
            super::convert(&process, &name, sink)
        })?);
    }
    Ok(traces)
}
