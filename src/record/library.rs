//! The recorder library carried inside the binary (`build.rs` builds `preload/` and this
//! module embeds it), written once to a private cache folder and preloaded from there. The
//! copy is named by a hash of its content and compared byte for byte before each use, so a
//! binary never preloads another build's library (the raw format must match on both sides).

use super::{RecordError, PRELOAD_NAME};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The library, as built for this binary.
static LIBRARY: &[u8] = include_bytes!(env!("FRAGSIM_PRELOAD_SO"));
const HASH: &str = env!("FRAGSIM_PRELOAD_HASH");

/// The folder of cached copies: `$XDG_CACHE_HOME/fragsim`, else `~/.cache/fragsim`.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("fragsim"))
}

/// The path of this binary's library in the cache, written there first if it is missing or
/// differs.
pub(crate) fn cached_library() -> Result<PathBuf, RecordError> {
    let dir = cache_dir().ok_or_else(|| {
        cache_error(
            Path::new("~/.cache/fragsim"),
            "neither XDG_CACHE_HOME nor HOME is set",
        )
    })?;
    let stem = PRELOAD_NAME.trim_end_matches(".so");
    let path = dir.join(format!("{stem}-{HASH}.so"));
    // Checked before each use, not only when writing: a copy in a folder others may write
    // to could be replaced after it was compared.
    private_dir(&dir)?;
    if std::fs::read(&path).is_ok_and(|b| b == LIBRARY) {
        return Ok(path);
    }
    // Written beside its name and renamed into place: a reader never sees half a library,
    // and fragsims writing at once each rename a whole copy.
    let mut tmp = tempfile::Builder::new()
        .prefix(".fragsim-preload-")
        .tempfile_in(&dir)
        .map_err(|e| cache_error(&dir, e))?;
    tmp.write_all(LIBRARY)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| cache_error(&dir, e))?;
    tmp.persist(&path)
        .map_err(|e| cache_error(&path, e.error))?;
    remove_other_copies(&dir, &path);
    Ok(path)
}

/// Other builds' copies, so that the cache holds one library, not one per build ever run (a
/// copy still preloaded stays mapped; its binary writes it again at its next use).
fn remove_other_copies(dir: &Path, keep: &Path) {
    let stem = PRELOAD_NAME.trim_end_matches(".so");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path != keep && name.starts_with(&format!("{stem}-")) && name.ends_with(".so") {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Creates `dir` (mode 0700) if missing; refuses one that others may write to or that
/// belongs to another user (a library there could be replaced under us).
fn private_dir(dir: &Path) -> Result<(), RecordError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| cache_error(dir, e))?;
    let meta = std::fs::metadata(dir).map_err(|e| cache_error(dir, e))?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(cache_error(
            dir,
            "it belongs to another user or others may write to it",
        ));
    }
    Ok(())
}

fn cache_error(path: &Path, why: impl std::fmt::Display) -> RecordError {
    RecordError::PreloadCache {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}
