//! Issue 36 §2: the builds people deploy, as named presets checked live. `redis` is Redis 7's
//! bundled jemalloc: the 5.3.0 release configured `--with-lg-quantum=3
//! --disable-cache-oblivious` (Redis's `deps/Makefile`); `page64k` the same release with
//! `--with-lg-page=16` (arm64 server packages), run on this 4 KiB-page kernel. Each is built by
//! `scripts/build-jemalloc.sh NAME` (run by the test when the library is not there yet). The
//! golden values are that library's own statistics, read at every event of live replays; the
//! preset is what the live library says it is (`arenas.quantum`, `arenas.page`,
//! `opt.cache_oblivious`, `version`).

mod common;

use fragsim::sizeclass::{build_name, Preset};
use std::path::PathBuf;

/// Build `name`'s library, built first if it is not there yet (about a minute: the crate's
/// source comes from the crate registry); `None`, saying why, where it cannot be built.
fn built_library(name: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lib = root.join(format!("target/jemalloc/{name}/libjemalloc.so.2"));
    if !lib.exists() {
        let built = std::process::Command::new(root.join("scripts/build-jemalloc.sh"))
            .arg(name)
            .output()
            .unwrap();
        if !built.status.success() {
            eprintln!(
                "SKIPPED: scripts/build-jemalloc.sh {name} failed (it needs cc, make and the crate registry): {}",
                String::from_utf8_lossy(&built.stderr)
            );
            return None;
        }
    }
    Some(lib)
}

fn redis_library() -> Option<PathBuf> {
    built_library("redis")
}

fn trace(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/traces")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// 64 KiB pages on a 4 KiB-page kernel: the one-arena and process models exact against the
/// real library at every compared event (its start-up pool, 72,704 bytes, is a small region of
/// the 80 KiB bin there, which the process model places), and `advise` prices the build
/// against the same release with 4 KiB pages.
#[test]
fn the_64k_page_preset_is_exact_live_and_advise_prices_it() {
    let Some(lib) = built_library("page64k") else {
        return;
    };
    let lib = lib.to_str().unwrap();
    let one = common::run_ok(&[
        "replay",
        &trace("python-dict.trace"),
        "--live",
        "--system-jemalloc",
        lib,
    ]);
    assert!(one.contains("live page64k (jemalloc 5.3.0)"), "{one}");
    assert!(one.contains("| values mismatched | 0 |"), "{one}");
    let process = common::run_ok(&[
        "replay",
        &trace("cpp-threads-map.trace"),
        "--process",
        "--live",
        "--every",
        "1",
        "--system-jemalloc",
        lib,
    ]);
    assert!(
        process.contains("live page64k (jemalloc 5.3.0)"),
        "{process}"
    );
    assert!(process.contains("| values mismatched | 0 |"), "{process}");
    assert!(
        process.contains("| snapshots compared | 62,426 |"),
        "{process}"
    );
    // The price: advise's rows of both builds are `replay --process`'s own figures under
    // each preset, and 64 KiB pages cost this trace active and resident bytes.
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("grid");
    std::fs::write(&grid, "preset=5.3.0\npreset=page64k\n").unwrap();
    let out = common::run_ok(&[
        "advise",
        &trace("cpp-threads-map.trace"),
        "--cpus",
        "2",
        "--grid",
        grid.to_str().unwrap(),
        "--no-live",
        "--format",
        "csv",
    ]);
    let rows = common::csv_rows(&out);
    let figure = |preset: &str, column: &str| -> u64 {
        let r = rows.iter().find(|r| r["preset"] == preset).unwrap();
        r[column].parse().unwrap()
    };
    for (preset, name) in [("5.3.0", "5.3.0"), ("page64k", "page64k")] {
        let replay = common::csv_rows(&common::run_ok(&[
            "replay",
            &trace("cpp-threads-map.trace"),
            "--process",
            "--cpus",
            "2",
            "--preset",
            name,
            "--format",
            "csv",
        ]));
        for column in ["peak_active_bytes", "peak_resident_bytes"] {
            let replayed: f64 = replay[0][column].parse().unwrap();
            assert_eq!(figure(preset, column) as f64, replayed, "{preset} {column}");
        }
    }
    assert!(figure("page64k", "peak_active_bytes") > figure("5.3.0", "peak_active_bytes"));
    assert!(figure("page64k", "peak_resident_bytes") > figure("5.3.0", "peak_resident_bytes"));
}

/// advise checks a deployed build's row live through the library the script built (beside
/// the binary, in `target/jemalloc`).
#[test]
fn advise_checks_a_deployed_build_live_through_its_library() {
    if redis_library().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("grid");
    std::fs::write(&grid, "preset=redis\n").unwrap();
    // By peak active, redis's 8-byte quantum beats 5.3.1 on this trace (its table).
    let out = common::run(&[
        "advise",
        &trace("cpp-threads-map.trace"),
        "--cpus",
        "2",
        "--grid",
        grid.to_str().unwrap(),
        "--objective",
        "peak-active",
        "--format",
        "csv",
    ]);
    let err = common::stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let rows = common::csv_rows(&common::stdout_of(&out));
    assert_eq!(rows[1]["preset"], "redis");
    assert_eq!(rows[1]["live_check"], "pass", "{err}");
    assert!(err.contains("Live check of redis defaults (5.3.0"), "{err}");
}

#[test]
fn the_redis_preset_names_the_build_redis_bundles() {
    let redis = Preset::from_name("redis").unwrap();
    let c = redis.config();
    assert_eq!((c.lg_quantum, c.lg_page, c.cache_oblivious), (3, 12, false));
    assert_eq!(c.version.as_str(), "5.3.0");
    assert_eq!(build_name(&c), "redis");
    // `5.3.0` names the release's own defaults (`default` stays, meaning the same).
    assert_eq!(Preset::from_name("5.3.0").unwrap(), Preset::V5_3_0);
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
        process.contains("| snapshots compared | 62,426 |"),
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
    assert_eq!((rows[0][0], rows[1][0]), ("5.3.0", "redis"), "{both}");
    assert_ne!(rows[0][1..], rows[1][1..], "{both}");
}
