//! `fragsim replay --process --stats-json FILE`: the model's statistics in the shape of
//! jemalloc's `malloc_stats_print(.., "J")`, diffed with the live jemalloc's own dump at the
//! same event (`--live` writes it to FILE with the extension `real.json`), under the linked
//! 5.3.1 and, where installed, Debian's 5.3.0.

mod common;

use common::{assert_refused, committed_trace, run, run_ok, s};
use serde_json::Value;
use std::path::Path;

const DEBIAN_530: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["jemalloc"].clone()
}

/// Every leaf of `v` (numbers, booleans, strings) with its path of keys and indices.
fn leaves(v: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| leaves(x, &format!("{path}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| leaves(x, &format!("{path}/{i}"), out)),
        _ => out.push((path.to_string(), v.clone())),
    }
}

fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    v.pointer(path)
}

/// What the replayer's own arena adds to a total of the live dump: its main thread's manual
/// arena (index `opt.narenas + 1`, after the huge arena's), which the model leaves out as
/// the live comparison does. `None`: not a total the replayer adds to.
fn replayer_share(real: &Value, path: &str) -> Option<u64> {
    let manual = real["opt"]["narenas"].as_u64().unwrap() + 1;
    let own = &real["stats.arenas"][manual.to_string()];
    assert!(
        own.is_object(),
        "the replayer's arena {manual} in the live dump"
    );
    let n = |p: &str| at(own, p).and_then(Value::as_u64).unwrap();
    if let Some(rest) = path.strip_prefix("/stats.arenas/merged") {
        return at(own, rest).and_then(Value::as_u64);
    }
    Some(match path {
        "/stats/allocated" => n("/small/allocated") + n("/large/allocated"),
        "/stats/active" => n("/pactive") * real["arenas"]["page"].as_u64().unwrap(),
        "/stats/metadata" => n("/base") + n("/internal"),
        "/stats/resident" | "/stats/mapped" | "/stats/retained" => n(&path[6..]),
        // The replayer's arena is one more index in use.
        "/arenas/narenas" => 1,
        _ => return None,
    })
}

/// Every key the model writes must be in the live dump with the same value, the live one
/// less the replayer's own arena's share; the version is the release (the live one carries
/// its git suffix: `5.3.1-0-g81034ce...`). Returns the keys compared.
fn diff(model: &Value, real: &Value, what: &str) -> usize {
    let mut keys = Vec::new();
    leaves(model, "", &mut keys);
    let mut wrong = Vec::new();
    for (path, m) in &keys {
        let Some(r) = at(real, path) else {
            wrong.push(format!("{path}: model {m}, not in the live dump"));
            continue;
        };
        let same = match (m, path.as_str()) {
            (Value::String(v), "/version") => r.as_str().unwrap().starts_with(&format!("{v}-")),
            (Value::Number(v), _) => match (v.as_u64(), replayer_share(real, path)) {
                (Some(v), Some(own)) => r.as_u64() == Some(v + own),
                _ => r == m,
            },
            _ => r == m,
        };
        if !same {
            wrong.push(format!("{path}: model {m}, live {r}"));
        }
    }
    eprintln!(
        "{what}: {} keys compared, {} equal",
        keys.len(),
        keys.len() - wrong.len()
    );
    assert!(
        wrong.is_empty(),
        "{what}: {} differ:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(40)].join("\n")
    );
    keys.len()
}

/// A live replay of a small four-thread trace at the end and at an event in the middle
/// (where both sides dump, then go on: the comparisons after the dump stay exact, its
/// buffer's dirty pages included), under each jemalloc: every key of the model's dump is
/// in jemalloc's own with the same number.
#[test]
fn the_models_dump_equals_the_live_jemallocs_own() {
    let dir = tempfile::tempdir().unwrap();
    let trace = committed_trace("c-thread-pool.trace");
    let mut builds = vec![("linked 5.3.1", None)];
    if Path::new(DEBIAN_530).is_file() {
        builds.push(("Debian 5.3.0", Some(DEBIAN_530)));
    } else {
        eprintln!("no Debian jemalloc 5.3.0 at {DEBIAN_530}: checking the linked 5.3.1 only");
    }
    for (name, lib) in builds {
        for when in ["end", "5000"] {
            let file = dir
                .path()
                .join(format!("{}-{when}.json", name.replace(' ', "-")));
            let mut args = vec![
                "replay",
                s(&trace),
                "--process",
                "--live",
                "--format",
                "csv",
            ];
            args.extend(["--stats-json", s(&file), "--at", when]);
            if let Some(lib) = lib {
                args.extend(["--system-jemalloc", lib]);
            }
            let summary = run_ok(&args);
            let mut lines = summary.lines();
            let (header, row) = (lines.next().unwrap(), lines.next().unwrap());
            let mismatched = header.split(',').position(|h| h == "values_mismatched");
            let values: Vec<&str> = row.split(',').collect();
            assert_eq!(values[mismatched.unwrap()], "0", "{summary}");
            let (model, real) = (read(&file), read(&file.with_extension("real.json")));
            let n = diff(&model, &real, &format!("{name} at {when}"));
            // Bins, large classes and extent sets of every arena and the merged one.
            assert!(n > 5_000, "{n} keys");
        }
    }
}

/// `--at EVENT` without --live: the dump holds the model's statistics after that event, as
/// the timeline's and the per-arena rows of the same event give them, plus the dump's own
/// buffer (65,536 bytes in arena 0, `malloc_stats_print`'s `STATS_PRINT_BUFFER`; one page
/// more active, the cache-oblivious pad of a large extent).
#[test]
fn at_an_event_the_dump_holds_that_events_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let trace = committed_trace("c-thread-pool.trace");
    let (file, timeline, per_arena) = (
        dir.path().join("at.json"),
        dir.path().join("timeline.csv"),
        dir.path().join("per-arena.csv"),
    );
    run_ok(&[
        "replay",
        s(&trace),
        "--process",
        "--stats-json",
        s(&file),
        "--at",
        "3000",
        "--timeline",
        s(&timeline),
        "--per-arena",
        s(&per_arena),
        "--every",
        "1000",
    ]);
    let dump = read(&file);
    let csv = std::fs::read_to_string(&timeline).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<u64> = csv
        .lines()
        .find(|l| l.starts_with("3000,"))
        .expect("the timeline's row of event 3000")
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    let stats = &dump["stats"];
    assert_eq!(stats["allocated"], col("allocated_bytes") + 65_536);
    assert_eq!(stats["active"], col("active_bytes") + 65_536 + 4096);
    let merged = &dump["stats.arenas"]["merged"];
    assert_eq!(merged["tcache_bytes"], col("tcache_bytes"));
    // Per arena: arena 0 holds the buffer, the others are as the row says.
    let arenas = std::fs::read_to_string(&per_arena).unwrap();
    let mut seen = 0;
    for line in arenas.lines().filter(|l| l.starts_with("3000,")) {
        let v: Vec<u64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        let a = &dump["stats.arenas"][v[1].to_string()];
        let buffer = if v[1] == 0 { 65_536 } else { 0 };
        let allocated =
            a["small"]["allocated"].as_u64().unwrap() + a["large"]["allocated"].as_u64().unwrap();
        assert_eq!(allocated, v[2] + buffer, "arena {}", v[1]);
        let pad = if v[1] == 0 { 4096 } else { 0 };
        assert_eq!(
            a["pactive"].as_u64().unwrap() * 4096,
            v[3] + buffer + pad,
            "arena {}",
            v[1]
        );
        assert_eq!(a["tcache_bytes"], v[4], "arena {}", v[1]);
        seen += 1;
    }
    assert!(seen >= 2, "{arenas}");
    // jemalloc's shape: the classes, and one entry per class in every arena.
    assert_eq!(dump["arenas"]["nbins"], 36);
    assert_eq!(dump["arenas"]["bin"].as_array().unwrap().len(), 36);
    assert_eq!(
        dump["stats.arenas"]["0"]["bins"].as_array().unwrap().len(),
        36
    );
    let nlextents = dump["arenas"]["nlextents"].as_u64().unwrap() as usize;
    assert_eq!(
        dump["stats.arenas"]["0"]["lextents"]
            .as_array()
            .unwrap()
            .len(),
        nlextents
    );
}

/// Bad input: an unwritable file, an event past the trace, `--at` without a dump.
#[test]
fn bad_stats_json_arguments_are_refused_in_one_line() {
    let trace = committed_trace("c-thread-pool.trace");
    let t = s(&trace);
    let out = run(&[
        "replay",
        t,
        "--process",
        "--stats-json",
        "/no/such/folder/s.json",
    ]);
    assert_refused(&out, "/no/such/folder/s.json");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    let out = run(&[
        "replay",
        t,
        "--process",
        "--stats-json",
        s(&file),
        "--at",
        "99999999",
    ]);
    assert_refused(&out, "--at 99999999");
    let out = run(&[
        "replay",
        t,
        "--process",
        "--stats-json",
        s(&file),
        "--at",
        "peak",
    ]);
    assert_refused(&out, "--at 'peak'");
    let out = run(&["replay", t, "--process", "--at", "10"]);
    assert_refused(&out, "--stats-json");
    let out = run(&["replay", t, "--process", "--stats-json", "-"]);
    assert_refused(&out, "standard output");
    let out = run(&["replay", t, "--process", "--live", "--stats-json", "-"]);
    assert_refused(&out, "two files");
    assert!(!file.exists());
}
