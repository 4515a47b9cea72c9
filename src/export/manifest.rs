//! The manifest of a folder the program owns (a report): the files it wrote, so that a rerun
//! replaces exactly those and keeps every other file, and so that a folder that is not one of
//! ours is refused rather than swapped away.

use super::WriteError;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The first line of a manifest; the files follow, one relative path a line.
const HEADING: &str =
    "# fragsim: the files this folder's last run wrote (a rerun replaces these, keeps the rest)";

/// Refuses `dir` unless it is missing, empty, or holds `manifest` (a folder written before).
pub(crate) fn check_owned(given: &Path, dir: &Path, manifest: &str) -> Result<(), WriteError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names.is_empty() || names.iter().any(|n| n == manifest) {
        return Ok(());
    }
    names.sort();
    Err(WriteError::other(
        given,
        format!(
            "the folder holds '{}' and has no {manifest}, so it is not a folder fragsim wrote: give a new or empty folder",
            names[0]
        ),
    ))
}

/// Every file (and link) under `dir`, relative, sorted; folders are walked, not listed.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = rel.join(entry.file_name());
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                _ => found.push(path),
            }
        }
    }
    found.sort();
    found
}

/// Writes the manifest of the finished folder `staging` into it: every file it holds.
pub fn write(staging: &Path, manifest: &str) -> Result<(), WriteError> {
    let mut text = format!("{HEADING}\n");
    for file in files_under(staging) {
        text.push_str(&format!("{}\n", file.display()));
    }
    text.push_str(&format!("{manifest}\n"));
    let path = staging.join(manifest);
    std::fs::write(&path, text).map_err(|e| WriteError::new(&path, &e))
}

/// The files the manifest in `old` lists (empty if it has none).
fn listed(old: &Path, manifest: &str) -> BTreeSet<PathBuf> {
    let text = std::fs::read_to_string(old.join(manifest)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Brings every file of the old folder its manifest does not list (files the user or another
/// command put there) into `staging`, unless the new folder has one of that name: nothing
/// the program did not write is lost when the old folder is removed. Hard links where the
/// filesystem allows (no copy, the same file), else copies.
pub(crate) fn carry_foreign(old: &Path, staging: &Path, manifest: &str) -> Result<(), WriteError> {
    let ours = listed(old, manifest);
    for rel in files_under(old) {
        if ours.contains(&rel) {
            continue;
        }
        let (from, to) = (old.join(&rel), staging.join(&rel));
        if std::fs::symlink_metadata(&to).is_ok() {
            continue;
        }
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| WriteError::new(&from, &e))?;
        }
        let meta = std::fs::symlink_metadata(&from).map_err(|e| WriteError::new(&from, &e))?;
        let done = if meta.file_type().is_symlink() {
            std::fs::read_link(&from).and_then(|target| std::os::unix::fs::symlink(target, &to))
        } else {
            std::fs::hard_link(&from, &to).or_else(|_| std::fs::copy(&from, &to).map(|_| ()))
        };
        done.map_err(|e| WriteError::new(&from, &e))?;
    }
    Ok(())
}
