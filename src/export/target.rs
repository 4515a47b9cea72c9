//! One writer for every output path: [`OutputFile`] is a seekable file that becomes the
//! target on [`OutputFile::commit`], with the rules of [`super::write_atomic`]:
//!
//! - a regular file, or nothing yet: a temporary file beside it, renamed over it on commit;
//! - a symbolic link: followed (the link stays a link, the file it names is written);
//! - a device, FIFO or socket: the bytes are gathered in a temporary file in the system's
//!   temporary folder and copied into it on commit, so the node itself is never replaced;
//! - a regular file in a folder that takes no new file (read-only): the same copy, in place;
//! - a folder: refused;
//! - `-`: standard output.
//!
//! Every temporary file is removed if the job fails, is interrupted or drops the value.

use super::atomic::{resolve_links, set_permissions};
use super::WriteError;
use crate::cleanup::{remove_on_interrupt, Registration};
use std::fs::OpenOptions;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// A file being written for a path the user gave; nothing reaches that path before
/// [`commit`](OutputFile::commit).
pub struct OutputFile {
    given: PathBuf,
    tmp: NamedTempFile,
    dest: Dest,
    _registration: Registration,
}

enum Dest {
    /// Rename the temporary file over this regular file (links resolved).
    Replace(PathBuf),
    /// Copy the bytes into this existing node (device, FIFO, file in a read-only folder).
    Copy(PathBuf),
}

impl OutputFile {
    /// Prepares writing `path`: checks now (before any work) that it can be written.
    pub fn create(path: &Path) -> Result<Self, WriteError> {
        let err = |e: &io::Error| WriteError::new(path, e);
        if path == Path::new("-") {
            return Self::copying(path, PathBuf::from(super::atomic::STDOUT));
        }
        // `metadata` follows links, so `/dev/stdout` (a link to a pipe) counts as a device.
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.is_dir() {
                return Err(WriteError::other(path, "it is a folder"));
            }
            if !meta.is_file() {
                check_writable(path)?;
                return Self::copying(path, path.to_path_buf());
            }
        }
        let target = resolve_links(path)?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        match tempfile::Builder::new()
            .prefix(".fragsim-")
            .tempfile_in(dir)
        {
            Ok(tmp) => Ok(Self::with(path, tmp, Dest::Replace(target))),
            // A writable file in a folder that takes no new file: written in place at the end.
            Err(_) if target.is_file() && check_writable(&target).is_ok() => {
                Self::copying(path, target)
            }
            Err(e) => Err(err(&e)),
        }
    }

    fn copying(given: &Path, target: PathBuf) -> Result<Self, WriteError> {
        let tmp = tempfile::Builder::new()
            .prefix(".fragsim-")
            .tempfile()
            .map_err(|e| WriteError::new(given, &e))?;
        Ok(Self::with(given, tmp, Dest::Copy(target)))
    }

    fn with(given: &Path, tmp: NamedTempFile, dest: Dest) -> Self {
        // An interrupt exits without running destructors: remove the temporary file then too.
        let registration = remove_on_interrupt(tmp.path());
        OutputFile {
            given: given.to_path_buf(),
            tmp,
            dest,
            _registration: registration,
        }
    }

    /// The path as the user gave it.
    pub fn path(&self) -> &Path {
        &self.given
    }

    /// Moves (or copies) what was written to the target path.
    pub fn commit(self) -> Result<(), WriteError> {
        let given = self.given;
        let err = |e: &io::Error| WriteError::new(&given, e);
        match self.dest {
            Dest::Replace(target) => {
                self.tmp.as_file().sync_all().map_err(|e| err(&e))?;
                set_permissions(self.tmp.as_file(), &target);
                self.tmp
                    .persist(&target)
                    .map_err(|e| WriteError::new(&given, &e.error))?;
                Ok(())
            }
            Dest::Copy(target) => {
                let mut tmp = self.tmp;
                tmp.seek(SeekFrom::Start(0)).map_err(|e| err(&e))?;
                // O_TRUNC empties a regular file and does nothing to a device or FIFO.
                let mut out = OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(&target)
                    .map_err(|e| err(&e))?;
                io::copy(tmp.as_file_mut(), &mut out)
                    .and_then(|_| out.flush())
                    .map_err(|e| err(&e))?;
                Ok(())
            }
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

impl Seek for OutputFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.tmp.seek(pos)
    }
}

/// Checks now, before any work, that `path` can be written as [`OutputFile::create`] will
/// write it, leaving nothing behind: its folder exists and takes a new file (or the file is
/// writable), it is not a folder, and a character device takes a write (a write of no bytes:
/// `/dev/full` refuses it, a terminal or `/dev/null` takes it; a FIFO is not opened, it
/// would block).
pub fn check_output(path: &Path) -> Result<(), WriteError> {
    use std::os::unix::fs::FileTypeExt;
    if path == Path::new("-") {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.file_type().is_char_device() => probe_device(path)?,
        Ok(_) => {}
        Err(_) => {
            let target = resolve_links(path)?;
            let dir = match target.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            match std::fs::metadata(dir) {
                Ok(meta) if !meta.is_dir() => {
                    return Err(WriteError::other(
                        path,
                        format!("'{}' is not a folder", dir.display()),
                    ))
                }
                Ok(_) => {}
                Err(_) => {
                    return Err(WriteError::other(
                        path,
                        format!("the folder '{}' does not exist", dir.display()),
                    ))
                }
            }
        }
    }
    OutputFile::create(path).map(drop)
}

/// Opens the character device `path` without blocking (nor making a terminal fragsim's own)
/// and writes no bytes to it.
fn probe_device(path: &Path) -> Result<(), WriteError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| WriteError::new(path, &e))?;
    // SAFETY: a write of zero bytes from a valid pointer to an open descriptor.
    let written = unsafe {
        use std::os::fd::AsRawFd;
        libc::write(
            file.as_raw_fd(),
            [0u8; 1].as_ptr() as *const libc::c_void,
            0,
        )
    };
    match written {
        n if n >= 0 => Ok(()),
        _ => match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            e => Err(WriteError::new(path, &e)),
        },
    }
}

/// Whether this process may write `path` (without opening it: a FIFO would block).
pub(super) fn check_writable(path: &Path) -> Result<(), WriteError> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| WriteError::other(path, "the path holds a NUL byte"))?;
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        Err(WriteError::new(path, &io::Error::last_os_error()))
    }
}

/// Whether writing `output` would write the regular file `input` (or the file another output
/// names): the same device and inode, or, for an output not yet there, the same real path.
/// Devices, FIFOs and `-` are never "the same file": `/dev/stdin` and `/dev/stdout` may both
/// be the terminal.
pub fn same_file(input: &Path, output: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if input == Path::new("-") || output == Path::new("-") {
        return false;
    }
    match (std::fs::metadata(input), std::fs::metadata(output)) {
        (Ok(a), Ok(b)) => a.is_file() && b.is_file() && a.dev() == b.dev() && a.ino() == b.ino(),
        // Neither there yet (two outputs): the same real folder and name.
        (Err(_), Err(_)) => match (real_path(input), real_path(output)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
        _ => false,
    }
}

/// The real path of a file that may not exist yet: its folder's real path and its name
/// (links followed, so a dangling link names the file it will create).
fn real_path(path: &Path) -> Option<PathBuf> {
    let path = resolve_links(path).ok()?;
    let name = path.file_name()?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(dir.canonicalize().ok()?.join(name))
}
