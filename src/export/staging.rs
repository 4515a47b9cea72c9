//! A folder of files that appears whole or not at all: written into a temporary folder beside
//! the target, then swapped in. Until [`StagedDir::commit`] the old folder is untouched; if
//! the job fails, is interrupted or the value is dropped, the temporary folder is removed.

use super::WriteError;
use crate::cleanup::{remove_on_interrupt, Registration};
use std::path::{Path, PathBuf};

/// A temporary folder that becomes `target` on [`commit`](StagedDir::commit).
pub struct StagedDir {
    target: PathBuf,
    /// For a folder the program owns: the name of its manifest (the files it wrote).
    manifest: Option<&'static str>,
    staging: Option<tempfile::TempDir>,
    _registration: Registration,
}

impl StagedDir {
    /// Creates the temporary folder beside `given` (same filesystem, so the swap is a rename),
    /// for a folder the program owns, such as a report (its parent folder must exist: a
    /// mistyped path never creates folders): the old folder
    /// must be missing, empty or hold the manifest `manifest` (else it is refused now);
    /// [`commit`](StagedDir::commit) writes the new manifest and keeps every file the old
    /// manifest does not list.
    pub fn owned(given: &Path, manifest: &'static str) -> Result<Self, WriteError> {
        Self::create(given, Some(manifest))
    }

    fn create(given: &Path, manifest: Option<&'static str>) -> Result<Self, WriteError> {
        let err = |e: &std::io::Error| WriteError::new(given, e);
        // Checked now, before the job: anything there must be a folder to be replaced.
        if given.exists() && !given.is_dir() {
            return Err(WriteError::other(given, "it is not a folder"));
        }
        // An existing folder by its real path: a symbolic link to a folder stays a link (the
        // folder it points to is replaced), and `.` or `..` have a name to put a sibling by.
        let resolved;
        let target = if given.exists() {
            resolved = given.canonicalize().map_err(|e| err(&e))?;
            resolved.as_path()
        } else {
            given
        };
        if let Some(manifest) = manifest {
            super::manifest::check_owned(given, target, manifest)?;
        }
        let name = target
            .file_name()
            .ok_or_else(|| WriteError::other(given, "not a folder name"))?;
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !parent.is_dir() {
            return Err(no_parent(given, parent));
        }
        let staging = tempfile::Builder::new()
            .prefix(&format!(".{}.fragsim-", name.to_string_lossy()))
            .tempdir_in(parent)
            .map_err(|e| err(&e))?;
        let registration = remove_on_interrupt(staging.path());
        Ok(StagedDir {
            target: target.to_path_buf(),
            manifest,
            staging: Some(staging),
            _registration: registration,
        })
    }

    /// The folder to write into.
    pub fn path(&self) -> &Path {
        self.staging.as_ref().expect("not committed").path()
    }

    /// Replaces the target with the finished folder: an atomic exchange where the system
    /// has one (Linux), else two renames; the old folder is then removed.
    pub fn commit(mut self) -> Result<(), WriteError> {
        if let Some(manifest) = self.manifest {
            super::manifest::write(self.path(), manifest)?;
            super::manifest::carry_foreign(&self.target, self.path(), manifest)?;
        }
        let staging = self.staging.take().expect("committed once").keep();
        let fail = |e: &std::io::Error| {
            let _ = std::fs::remove_dir_all(&staging);
            WriteError::new(&self.target, e)
        };
        // Temporary folders are private (0700); a report folder is an ordinary one.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o755));
        }
        if !self.target.exists() {
            return std::fs::rename(&staging, &self.target).map_err(|e| fail(&e));
        }
        if !self.target.is_dir() {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(WriteError::other(&self.target, "it is not a folder"));
        }
        if exchange(&staging, &self.target).is_err() {
            // Two renames: the target is missing for a moment, never half-written.
            let old = staging.with_extension("old");
            std::fs::rename(&self.target, &old).map_err(|e| fail(&e))?;
            if let Err(e) = std::fs::rename(&staging, &self.target) {
                let _ = std::fs::rename(&old, &self.target);
                return Err(fail(&e));
            }
            let _ = std::fs::remove_dir_all(&old);
            return Ok(());
        }
        // After the exchange the staging path holds the old folder.
        let _ = std::fs::remove_dir_all(&staging);
        Ok(())
    }
}

/// Swaps two paths atomically (Linux `renameat2(RENAME_EXCHANGE)`).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let a = CString::new(a.as_os_str().as_bytes())?;
    let b = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both are valid NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

fn no_parent(given: &Path, parent: &Path) -> WriteError {
    WriteError::other(
        given,
        format!("its parent folder '{}' does not exist", parent.display()),
    )
}

/// Creates the output folder `dir` if it is missing, and only its last component: a mistyped
/// `--charts /nonexistent/a/b` is refused rather than building folders at the root. Returns
/// whether this call created it. Something there that is not a folder is refused.
pub fn create_folder(dir: &Path) -> Result<bool, WriteError> {
    if dir.is_dir() {
        return Ok(false);
    }
    if dir.exists() || dir.is_symlink() {
        return Err(WriteError::other(dir, "it is not a folder"));
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(no_parent(dir, parent));
    }
    std::fs::create_dir(dir).map_err(|e| WriteError::new(dir, &e))?;
    Ok(true)
}
