//! An install that records (issue 39 §4): the binary carries the recorder library and needs
//! nothing beside it. Here the built binary is copied alone into an empty folder and records
//! with an empty cache; `scripts/check-install.sh` (run by `.ci/run`) does the whole
//! `cargo install --path .` of a clean copy of the repository.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// The binary, alone in `dir`, with `cache` as its cache folder and no override.
fn lone_fragsim(dir: &Path, cache: &Path) -> Command {
    let exe = dir.join("fragsim");
    if !exe.exists() {
        // A hard link, not a copy: a copy open for writing while another test thread forks
        // leaves the child a writer, and running the copy fails with "Text file busy".
        let built = env!("CARGO_BIN_EXE_fragsim");
        if std::fs::hard_link(built, &exe).is_err() {
            std::fs::copy(built, &exe).unwrap();
        }
    }
    let mut cmd = Command::new(exe);
    cmd.env("XDG_CACHE_HOME", cache)
        .env_remove("FRAGSIM_PRELOAD");
    cmd
}

fn record(dir: &Path, cache: &Path, trace: &Path) -> Output {
    lone_fragsim(dir, cache)
        .arg("record")
        .arg("-o")
        .arg(trace)
        .args(["--", "sh", "-c", "ls / > /dev/null"])
        .output()
        .unwrap()
}

fn events(dir: &Path, cache: &Path, trace: &Path) -> u64 {
    let out = lone_fragsim(dir, cache)
        .args(["trace", "stats", "--format", "csv"])
        .arg(trace)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let row = text.lines().nth(1).expect("a row of statistics");
    row.split(',').nth(1).unwrap().parse().unwrap()
}

/// The one cached copy of the library in `cache`.
fn cached(cache: &Path) -> std::path::PathBuf {
    let copies: Vec<_> = std::fs::read_dir(cache.join("fragsim"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    copies[0].clone()
}

#[test]
fn a_lone_binary_records_with_its_own_library() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("bin"), tmp.path().join("cache"));
    std::fs::create_dir(&dir).unwrap();
    let trace = tmp.path().join("ls.trace");
    let out = record(&dir, &cache, &trace);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `sh` runs `ls`'s malloc calls in its own process image only with --follow-forks; the
    // shell itself allocates (a few hundred calls with bash or dash).
    assert!(events(&dir, &cache, &trace) > 10);
    // The copy: private, named by its hash, a shared object.
    let lib = cached(&cache);
    let name = lib.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with("libfragsim_preload-") && name.ends_with(".so"),
        "{name}"
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cache.join("fragsim")), 0o700);
    assert_eq!(mode(&lib) & 0o077, 0, "{:o}", mode(&lib));
    assert_eq!(&std::fs::read(&lib).unwrap()[..4], b"\x7fELF");
    // A damaged copy is replaced before use, in place.
    std::fs::write(&lib, b"not a library").unwrap();
    let out = record(&dir, &cache, &trace);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(events(&dir, &cache, &trace) > 10);
    assert_eq!(cached(&cache), lib);
    assert_eq!(&std::fs::read(&lib).unwrap()[..4], b"\x7fELF");
    // Another build's copy is removed when this build writes its own.
    let other = cache.join("fragsim/libfragsim_preload-0000000000000000.so");
    std::fs::rename(&lib, &other).unwrap();
    let out = record(&dir, &cache, &trace);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(cached(&cache), lib);
}

#[test]
fn a_cache_folder_others_may_write_to_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("bin"), tmp.path().join("cache"));
    std::fs::create_dir(&dir).unwrap();
    std::fs::create_dir_all(cache.join("fragsim")).unwrap();
    std::fs::set_permissions(
        cache.join("fragsim"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let trace = tmp.path().join("t.trace");
    let out = record(&dir, &cache, &trace);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.trim_end().lines().count() == 1
            && stderr.contains("others may write to it")
            && stderr.contains(&cache.join("fragsim").display().to_string()),
        "{stderr}"
    );
    assert!(!trace.exists());
}

#[test]
fn fragsim_preload_still_overrides_and_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cache) = (tmp.path().join("bin"), tmp.path().join("cache"));
    std::fs::create_dir(&dir).unwrap();
    let missing = tmp.path().join("no-such-library.so");
    let out = lone_fragsim(&dir, &cache)
        .env("FRAGSIM_PRELOAD", &missing)
        .args(["record", "-o"])
        .arg(tmp.path().join("t.trace"))
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("FRAGSIM_PRELOAD names"), "{stderr}");
    assert!(!cache.exists(), "the override does not touch the cache");
}
