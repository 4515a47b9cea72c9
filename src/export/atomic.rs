//! Writing a file so that a reader never sees it half-written, without ever replacing
//! something that is not a regular file.
//!
//! - a regular file, or nothing yet: a temporary file beside it, then a rename over it;
//! - a symbolic link: the same, onto the file the link points to (the link stays a link);
//! - a device, FIFO or socket (`/dev/null`, `/dev/stdout`, a named pipe): written directly,
//!   since renaming over it would replace the device node with a file;
//! - a regular file in a folder that takes no new file (read-only): written in place;
//! - a folder: refused.
//!
//! [`super::OutputFile`] is the same for a writer that streams (and seeks).
//!
//! `-` is standard output. Errors name the path the user gave, never the temporary file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A file could not be written; `path` is the path as given.
#[derive(Debug, thiserror::Error)]
#[error("cannot write '{}': {reason}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    /// What went wrong, without temporary file names.
    pub reason: String,
    /// The operating system's error kind, e.g. `StorageFull` for a full disk.
    pub kind: io::ErrorKind,
}

impl WriteError {
    pub(crate) fn new(path: &Path, err: &io::Error) -> Self {
        WriteError {
            path: path.to_path_buf(),
            reason: io_reason(err),
            kind: err.kind(),
        }
    }

    pub(crate) fn other(path: &Path, reason: impl Into<String>) -> Self {
        WriteError {
            path: path.to_path_buf(),
            reason: reason.into(),
            kind: io::ErrorKind::Other,
        }
    }
}

/// The text of an I/O error without the temporary path tempfile appends to it
/// ("... at path \"/dir/.fragsim-JDGiEO\"").
fn io_reason(err: &io::Error) -> String {
    if let Some(code) = err.raw_os_error() {
        return io::Error::from_raw_os_error(code).to_string();
    }
    let text = err.to_string();
    match text.rfind(" at path ") {
        Some(end) => text[..end].to_string(),
        None => text,
    }
}

/// Where `-` (standard output, for every output option) is written.
pub(super) const STDOUT: &str = "/dev/stdout";

/// Symbolic links followed before giving up, as the kernel's own limit (ELOOP).
const MAX_LINKS: usize = 40;

/// Where writing `path` should land: follows symbolic links, including dangling ones
/// (the file they name is created).
pub(super) fn resolve_links(path: &Path) -> Result<PathBuf, WriteError> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&current).map_err(|e| WriteError::new(path, &e))?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(WriteError::other(path, "too many levels of symbolic links"))
}

/// Writes `bytes` to `path`; see the module documentation for what happens to links,
/// devices and folders.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    if path == Path::new("-") {
        return write_in_place(Path::new(STDOUT), bytes).map_err(|e| WriteError {
            path: path.to_path_buf(),
            ..e
        });
    }
    // `metadata` follows links, so `/dev/stdout` (a link to a pipe) counts as a device.
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_dir() {
            return Err(WriteError::other(path, "it is a folder"));
        }
        if !meta.is_file() {
            return write_in_place(path, bytes);
        }
    }
    let target = resolve_links(path)?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = match tempfile::Builder::new()
        .prefix(".fragsim-")
        .tempfile_in(dir)
    {
        Ok(tmp) => tmp,
        // A writable file in a folder that takes no new file (read-only): written in place.
        Err(_) if target.is_file() && super::target::check_writable(&target).is_ok() => {
            return write_in_place(&target, bytes).map_err(|e| WriteError {
                path: path.to_path_buf(),
                ..e
            });
        }
        Err(e) => return Err(WriteError::new(path, &e)),
    };
    // An interrupt exits without running destructors: remove the temporary file then too.
    let _registration = crate::cleanup::remove_on_interrupt(tmp.path());
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| WriteError::new(path, &e))?;
    set_permissions(tmp.as_file(), &target);
    tmp.persist(&target)
        .map_err(|e| WriteError::new(path, &e.error))?;
    Ok(())
}

/// A device or pipe: open it as it is and write.
fn write_in_place(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut file = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| WriteError::new(path, &e))?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| WriteError::new(path, &e))
}

/// The replaced file's permissions, or an ordinary readable file's (temporary files are 0600).
pub(super) fn set_permissions(file: &File, target: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let permissions = std::fs::metadata(target)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| std::fs::Permissions::from_mode(0o644));
        let _ = file.set_permissions(permissions);
    }
    #[cfg(not(unix))]
    let _ = (file, target);
}
