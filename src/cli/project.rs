//! The fragsim project a run belongs to, found at run time (never a path baked in at build
//! time: an installed binary outlives the clone it was built in).

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// The nearest folder at or above `start` whose Cargo.toml names the package fragsim.
pub fn project_root(start: &Path) -> Option<PathBuf> {
    start.ancestors().find_map(|dir| {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        manifest
            .lines()
            .any(|l| l.replace(' ', "") == "name=\"fragsim\"")
            .then(|| dir.to_path_buf())
    })
}

/// The seed's C++ benchmark script, checked before any work: `given` if it is a file, else
/// `scripts/seed-pmr.sh` of the fragsim project around the current folder, else of the one
/// around the executable (`target/release/fragsim` of a clone). Otherwise a one-line error
/// saying what to pass.
pub fn seed_script(given: Option<&Path>) -> Result<PathBuf> {
    const SCRIPT: &str = "scripts/seed-pmr.sh";
    if let Some(path) = given {
        if !path.is_file() {
            bail!(
                "--seed-script '{}': no such file (pass the project's {SCRIPT}, or --no-cxx)",
                path.display()
            );
        }
        return Ok(path.to_path_buf());
    }
    let here = std::env::current_dir().ok();
    let exe = std::env::current_exe().ok();
    let starts = [here.as_deref(), exe.as_deref().and_then(Path::parent)];
    for start in starts.into_iter().flatten() {
        if let Some(script) = project_root(start).map(|root| root.join(SCRIPT)) {
            if script.is_file() {
                return Ok(script);
            }
        }
    }
    bail!(
        "no {SCRIPT} in a fragsim project around '{}' or the executable: pass --seed-script FILE, or --no-cxx to skip the seed's C++ program",
        here.as_deref().unwrap_or(Path::new(".")).display()
    )
}
