//! Issue 36 §2: the builds people deploy, as named presets checked live. `redis` is Redis 7's
//! bundled jemalloc: the 5.3.0 release configured `--with-lg-quantum=3
//! --disable-cache-oblivious` (Redis's `deps/Makefile`), built by `scripts/build-jemalloc.sh
//! redis` (run by the test when the library is not there yet). The golden values are that library's own
//! statistics, read at every event of live replays; the preset is what the live library says
//! it is (`arenas.quantum`, `opt.cache_oblivious`, `version`).

mod common;

use fragsim::sizeclass::{build_name, Preset};
use std::path::PathBuf;

/// The library, built first if it is not there yet (about a minute: the crate's source comes
/// from the crate registry); `None`, saying why, where it cannot be built.
fn redis_library() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lib = root.join("target/jemalloc/redis/libjemalloc.so.2");
    if !lib.exists() {
        let built = std::process::Command::new(root.join("scripts/build-jemalloc.sh"))
            .arg("redis")
            .output()
            .unwrap();
        if !built.status.success() {
            eprintln!(
                "SKIPPED: scripts/build-jemalloc.sh redis failed (it needs cc, make and the crate registry): {}",
                String::from_utf8_lossy(&built.stderr)
            );
            return None;
        }
    }
    Some(lib)
}

#[test]
fn the_redis_preset_names_the_build_redis_bundles() {
    let redis = Preset::from_name("redis").unwrap();
    let c = redis.config();
    assert_eq!((c.lg_quantum, c.lg_page, c.cache_oblivious), (3, 12, false));
    assert_eq!(c.version.as_str(), "5.3.0");
    assert_eq!(build_name(&c), "redis");
    // `5.3.0` names the release's own defaults (`default` stays, meaning the same).
    assert_eq!(Preset::from_name("5.3.0").unwrap(), Preset::Default);
    let help = common::run_ok(&["replay", "--help"]);
    assert!(
        help.contains("redis:") && help.contains("--disable-cache-oblivious"),
        "{help}"
    );
}

#[test]
fn the_redis_preset_is_exact_against_the_library_redis_bundles() {
    let Some(lib) = redis_library() else { return };
    let lib = lib.to_str().unwrap();
    let traces = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/traces");
    // The one-arena model, under the preset the live library reports.
    let one = common::run_ok(&[
        "replay",
        traces.join("python-dict.trace").to_str().unwrap(),
        "--live",
        "--system-jemalloc",
        lib,
    ]);
    assert!(one.contains("live redis (jemalloc 5.3.0)"), "{one}");
    assert!(one.contains("| values mismatched | 0 |"), "{one}");
    // The whole process: threads, caches, arenas, every event.
    let process = common::run_ok(&[
        "replay",
        traces.join("cpp-threads-map.trace").to_str().unwrap(),
        "--process",
        "--live",
        "--every",
        "1",
        "--system-jemalloc",
        lib,
    ]);
    assert!(process.contains("live redis (jemalloc 5.3.0)"), "{process}");
    assert!(process.contains("| values mismatched | 0 |"), "{process}");
    assert!(
        process.contains("| snapshots compared | 62426 |"),
        "{process}"
    );
    // And the preset is not the release's defaults: the same trace differs under them.
    let both = common::run_ok(&[
        "replay",
        traces.join("python-dict.trace").to_str().unwrap(),
        "--preset",
        "5.3.0,redis",
        "--format",
        "csv",
    ]);
    let rows: Vec<Vec<&str>> = both
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!((rows[0][0], rows[1][0]), ("default", "redis"), "{both}");
    assert_ne!(rows[0][1..], rows[1][1..], "{both}");
}
