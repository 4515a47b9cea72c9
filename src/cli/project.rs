//! The fragsim project a run belongs to, found at run time (never a path baked in at build
//! time: an installed binary outlives the clone it was built in).

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// The nearest folder at or above `start` whose Cargo.toml names the package fragsim.
pub(crate) fn project_root(start: &Path) -> Option<PathBuf> {
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
pub(crate) fn seed_script(given: Option<&Path>) -> Result<PathBuf> {
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
    if let Some(script) = in_project(|root| root.join(SCRIPT).is_file()) {
        return Ok(script.join(SCRIPT));
    }
    bail!(
        "no {SCRIPT} in a fragsim project around '{}' or the executable: pass --seed-script FILE, or --no-cxx to skip the seed's C++ program",
        current_dir().display()
    )
}

/// The root of the committed traces (`data/traces` below it), found as [`seed_script`] is;
/// a one-line error before any work when there is none.
pub(crate) fn traces_root() -> Result<PathBuf> {
    const TRACES: &str = "data/traces";
    in_project(|root| root.join(TRACES).is_dir()).ok_or_else(|| {
        anyhow::anyhow!(
            "no {TRACES} in a fragsim project around '{}' or the executable: run the report from the fragsim clone",
            current_dir().display()
        )
    })
}

/// The fragsim project around the current folder, else around the executable, that `has`
/// what is looked for.
fn in_project(has: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    let here = std::env::current_dir().ok();
    let exe = std::env::current_exe().ok();
    let starts = [here, exe.and_then(|e| e.parent().map(Path::to_path_buf))];
    starts
        .into_iter()
        .flatten()
        .filter_map(|start| project_root(&start))
        .find(|root| has(root))
}

fn current_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}
