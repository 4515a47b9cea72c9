//! A folder of raw files (`raw.<pid>`, one per recorded process): the children's files of a
//! recording, and `record --convert`, which converts a folder a recording left behind (a
//! second interrupt, `--keep-raw`).

use super::raw::{parse, RawProcess, FLAG_STACKS};
use super::{convert_into, RecordError, RecordedTrace};
use crate::trace::{Fields, TraceError};
use std::path::{Path, PathBuf};

/// What the user is told about the raw files an interrupted recording leaves in `dir`.
pub(crate) fn kept_note(dir: &Path, out: &Path) -> String {
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
pub(crate) fn convert_dir(dir: &Path, out: &Path) -> Result<Vec<RecordedTrace>, RecordError> {
    // The threads a recording's conversion takes ([`super::recording_threads`]).
    let threads = super::recording_threads()?;
    let mut files = Vec::new();
    for (pid, raw) in raw_files(dir)? {
        files.push((pid, parse(&raw)?));
    }
    let root = root_of(dir, &files)?;
    let noted = child_processes(dir);
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
        let command = if pid == root {
            read_program(dir)
        } else {
            command_of(&noted, pid)
        };
        traces.push(convert_into(&path, fields, pid, command, |sink| {
            super::convert_with_progress(&process, &name, sink, &mut |_| {}, threads)
        })?);
    }
    Ok(traces)
}

/// `DIR/program`: the recorded program's command line, each argument NUL-terminated, for
/// `--convert` to name it in the trace.
pub(super) fn write_program(dir: &Path, command: &[String]) -> Result<(), RecordError> {
    let mut bytes = Vec::new();
    for arg in command {
        bytes.extend_from_slice(arg.as_bytes());
        bytes.push(0);
    }
    std::fs::write(dir.join("program"), bytes).map_err(|source| RecordError::TempDir {
        out: dir.to_path_buf(),
        source,
    })
}

/// The command line [`write_program`] left (empty if none: a folder of an older fragsim).
fn read_program(dir: &Path) -> Vec<String> {
    std::fs::read(dir.join("program")).map_or(Vec::new(), |b| split_args(&b))
}

/// NUL-terminated arguments (`/proc/PID/cmdline`), lossily as text. A server that rewrites
/// its process title (redis, nginx, postgres) pads the old arguments' room with NULs: the
/// trailing empty arguments are dropped (a forked redis child read as its title and 30 `''`).
fn split_args(bytes: &[u8]) -> Vec<String> {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let bytes = &bytes[..end];
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// A process other than the program that loaded the recorder, from its `proc.<pid>` notes
/// (`preload/src/notes.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildProcess {
    pub pid: u64,
    /// Its parent when it started.
    pub ppid: u64,
    /// Its program and arguments in its last image (a fork that did not exec: its parent's).
    pub command: Vec<String>,
    /// It never exec'd: a copy of its parent.
    pub fork_only: bool,
}

/// Every process noted in `dir`, by pid (a note that does not parse is skipped: it only
/// names processes).
pub(crate) fn child_processes(dir: &Path) -> Vec<ChildProcess> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<ChildProcess> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid: u64 = name.strip_prefix("proc.")?.parse().ok()?;
            parse_notes(pid, &std::fs::read(e.path()).ok()?)
        })
        .collect();
    found.sort_by_key(|c| c.pid);
    found
}

/// One process's notes: `kind u8, ppid u64, len u32, cmdline` per image.
fn parse_notes(pid: u64, mut bytes: &[u8]) -> Option<ChildProcess> {
    let mut process: Option<ChildProcess> = None;
    while bytes.len() >= 13 {
        let kind = bytes[0];
        let ppid = u64::from_le_bytes(bytes[1..9].try_into().ok()?);
        let len = u32::from_le_bytes(bytes[9..13].try_into().ok()?) as usize;
        let cmdline = bytes.get(13..13 + len)?;
        bytes = &bytes[13 + len..];
        let first = process.is_none();
        let p = process.get_or_insert(ChildProcess {
            pid,
            ppid,
            command: Vec::new(),
            fork_only: true,
        });
        if first {
            p.ppid = ppid;
        }
        p.command = split_args(cmdline);
        p.fork_only &= kind == b'f';
    }
    process
}

/// The command line noted for process `pid` (empty if none).
pub(super) fn command_of(noted: &[ChildProcess], pid: u64) -> Vec<String> {
    noted
        .iter()
        .find(|c| c.pid == pid)
        .map_or(Vec::new(), |c| c.command.clone())
}

#[cfg(test)]
mod tests {
    use super::split_args;

    #[test]
    fn arguments_and_a_rewritten_title() {
        assert_eq!(split_args(b"ls\0-l\0/\0"), ["ls", "-l", "/"]);
        // A title written over the arguments, the rest of their room NULs (redis-server
        // forked for BGSAVE, as /proc/PID/cmdline read it).
        assert_eq!(
            split_args(b"redis-server *:6399\0\0\0\0\0\0"),
            ["redis-server *:6399"]
        );
        // An empty argument inside stays.
        assert_eq!(split_args(b"a\0\0b\0"), ["a", "", "b"]);
        assert!(split_args(b"\0\0").is_empty());
    }
}
