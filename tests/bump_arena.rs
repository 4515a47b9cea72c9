//! The bump-arena scenario (the second seed): the model against hand-worked cases and against jemalloc itself.

use fragsim::experiments::{header_bytes, measure, predict, BumpArenaSpec, BumpReplay, Strategy};
use fragsim::live::LiveBuild;
use fragsim::sizeclass::{AllocatorConfig, SizeClasses};
use std::process::Command;

fragsim::use_jemalloc!();

fn default_classes() -> SizeClasses {
    SizeClasses::new(AllocatorConfig::default()).unwrap()
}

#[test]
fn general_allocator_hand_worked_thousand_vectors() {
    // 100 x i32 = 400 B -> the 448 B class (jemalloc manual: 384, 448, 512).
    // Outer array: 1000 x 24 B = 24000 B -> the 24576 B large class (16K, 20K, 24K).
    // Usable: 24576 + 1000 x 448 = 472576. Calls: 1001.
    // Active: 448 B slabs are 7 pages holding 64 regions -> ceil(1000 / 64) = 16 slabs of
    // 28672 B = 458752, plus 24576 + one 4096 B cache-oblivious page = 28672: 487424.
    let spec = BumpArenaSpec {
        vectors: 1000,
        elements: 100,
        elem_bytes: 4,
    };
    let p = predict(&default_classes(), &spec, 24, 32).unwrap();
    let general = &p[0];
    assert_eq!(general.strategy, Strategy::General);
    assert_eq!(general.ideal, 400_000 + 24_000);
    assert_eq!(general.usable, 24576 + 1000 * 448);
    assert_eq!(general.active, 16 * 28672 + 24576 + 4096);
    assert_eq!(general.allocator_calls, 1001);
}

#[test]
fn bumpalo_replay_hand_worked_chunks() {
    // bumpalo 3.x: first chunk 512 - 64 (footer 48 + assumed malloc overhead 16) = 448 B
    // usable; then doubling, each rounded so chunk + 64 is a power of two below 4 KiB and a
    // page multiple above: 960, 1984, 4032, 8128. 400-byte blocks fit 1, 2, 4, 10 and 20 of
    // them: 37 blocks fill exactly five chunks, and the 38th opens a sixth (16320).
    let mut replay = BumpReplay::new();
    for _ in 0..37 {
        replay.alloc(400, 4);
    }
    assert_eq!(replay.chunks, vec![448, 960, 1984, 4032, 8128]);
    // Requests to the allocator are chunk + 48-byte footer: 16 B short of 512, 1024, ...
    let requests: Vec<u64> = replay.chunk_requests().collect();
    assert_eq!(requests, vec![496, 1008, 2032, 4080, 8176]);
    replay.alloc(400, 4);
    assert_eq!(replay.chunks.last(), Some(&16320));
    // A request larger than twice the last chunk gets a chunk of its own size (page-rounded).
    let mut big = BumpReplay::new();
    big.alloc(100_000, 8);
    assert_eq!(big.chunks, vec![102_400 - 64]);
}

#[test]
fn arena_chunks_land_on_power_of_two_classes() {
    let spec = BumpArenaSpec {
        vectors: 1000,
        elements: 100,
        elem_bytes: 4,
    };
    let p = predict(&default_classes(), &spec, 24, 32).unwrap();
    let arena = &p[1];
    let d = default_classes();
    for &c in &arena.chunk_requests {
        let class = d.usable_size(c).unwrap();
        assert_eq!(class - c, 16, "chunk request {c} served by {class}");
    }
    assert_eq!(
        p[2].usable, arena.usable,
        "no-free arena holds the same memory"
    );
}

#[test]
fn predicted_equals_measured_usable_bytes_live() {
    let spec = BumpArenaSpec {
        vectors: 5000,
        elements: 100,
        elem_bytes: 4,
    };
    let model = SizeClasses::new(LiveBuild::read().unwrap().config().unwrap()).unwrap();
    let (std_header, bump_header) = header_bytes();
    let predictions = predict(&model, &spec, std_header, bump_header).unwrap();
    let measured = measure(&spec, 1).unwrap();
    for (p, m) in predictions.iter().zip(&measured) {
        assert_eq!(p.strategy, m.strategy);
        assert_eq!(p.usable, m.usage.allocated, "{:?} usable", p.strategy);
        assert_eq!(p.active, m.usage.active, "{:?} active pages", p.strategy);
        assert_eq!(
            p.bump_allocated, m.bump_allocated,
            "{:?} bumpalo bytes",
            p.strategy
        );
    }
}

/// The report's memory-only run (`runs` 0, the builds being timed in child processes) still
/// measures every strategy's bytes, equal to the size-class model's prediction as above, and
/// has no times: the table shows "-" in its time columns.
#[test]
fn memory_only_measurement_has_the_bytes_and_no_times() {
    let spec = BumpArenaSpec {
        vectors: 5000,
        elements: 100,
        elem_bytes: 4,
    };
    let result = fragsim::experiments::run_scenario(spec, 0, false, None).unwrap();
    assert!(result.mismatches().is_empty(), "{:?}", result.mismatches());
    assert_eq!(result.measurements.len(), 3);
    let table = fragsim::experiments::bump_arena_table(&result);
    let ms: Vec<usize> = (0..table.columns.len())
        .filter(|&i| table.columns[i].ends_with("_ms"))
        .collect();
    assert_eq!(ms.len(), 3);
    for (m, row) in result.measurements.iter().zip(&table.rows) {
        assert_eq!(m.runs, 0);
        assert!(m.build.is_zero() && m.reset.is_zero());
        for &i in &ms {
            assert_eq!(row[i], fragsim::export::Cell::Missing("-"), "{row:?}");
        }
    }
}

#[test]
fn bad_workloads_are_one_line_errors() {
    for (args, names) in [
        (vec!["--vectors", "0"], "vector count 0"),
        (vec!["--elements", "0"], "element count 0"),
        (vec!["--elem-bytes", "3"], "element size 3"),
        (
            vec!["--vectors", "4000000000", "--elements", "4000000000"],
            "overflows",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_fragsim"))
            .arg("arena")
            .args(&args)
            .arg("--model-only")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
    }
}

/// `fragsim bump-arena --format json --vectors 1000 EXTRA...`, which must exit 0: its table.
fn bump_arena_json(extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_fragsim"))
        .args(["bump-arena", "--format", "json", "--vectors", "1000"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{extra:?}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_json_table_has_every_strategy() {
    // What `fragsim bump-arena --format json` prints: the table shape of every command.
    let json = bump_arena_json(&["--runs", "1"]);
    assert!(json["title"].as_str().unwrap().starts_with("1000 vectors"));
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(row["predicted_usable"], row["measured_usable"], "{row}");
    }
}

#[test]
fn json_writes_null_for_what_was_not_measured() {
    // `--model-only` measures nothing: the measured columns are missing, which CSV and
    // Markdown print as `-` and JSON must write as null (not the string "-").
    let json = bump_arena_json(&["--model-only"]);
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert!(row["measured_usable"].is_null(), "{row}");
        assert!(row["build_ms"].is_null(), "{row}");
        assert!(row["predicted_usable"].is_u64(), "{row}");
    }
}
