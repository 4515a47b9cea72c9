//! `fragsim replay --blame`: every byte of active memory charged to call sites.
//!
//! (a) On every committed trace the charged total equals the active bytes of the separate
//! `replay --process` summary, at the peak and at the end. (b) A C program with known call
//! sites (tests/native_programs/blame_sites.c), recorded with `--stacks`, and the same kind
//! of scenario written by hand as text traces: the table names the sites with the bytes
//! derived by hand below. (c) Bad `--at` values and outputs over the trace are refused.
//!
//! Every run names the build (`--preset 5.3.1`, the linked jemalloc's: 16-byte quantum,
//! 4 KiB pages, large sizes rounded to pages) and `--cpus 2` (8 automatic arenas), so the
//! figures do not depend on the machine. Size classes used (jemalloc's `sc.c`, see `fragsim
//! classes`): 48 bytes: 12 KiB slabs of 256 regions; 64 bytes: 4 KiB slabs of 64; 5120
//! bytes: 20 KiB slabs of 4.

mod common;

use common::{assert_refused, csv_rows, fragsim, num, s, stderr_of, stdout_of, Row};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BUILD: [&str; 4] = ["--preset", "5.3.1", "--cpus", "2"];

fn blame(trace: &Path, extra: &[&str]) -> Vec<Row> {
    let out = fragsim()
        .args(["replay", s(trace), "--blame", "--format", "csv"])
        .args(BUILD)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    csv_rows(&stdout_of(&out))
}

/// `replay --process`'s summary (field name -> value: one CSV row of named fields).
fn process_summary(trace: &Path) -> HashMap<String, u64> {
    let out = fragsim()
        .args(["replay", s(trace), "--process", "--format", "csv"])
        .args(BUILD)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let rows = csv_rows(&stdout_of(&out));
    assert_eq!(rows.len(), 1, "one summary row");
    rows[0]
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.parse().ok()?)))
        .collect()
}

fn total(rows: &[Row]) -> &Row {
    rows.iter()
        .find(|r| r["site"] == "total")
        .expect("a total row")
}

/// The row whose innermost frame is `function` (`function+0x..`).
fn site<'a>(rows: &'a [Row], function: &str) -> &'a Row {
    let prefix = format!("{function}+0x");
    rows.iter()
        .find(|r| {
            r["frames"].starts_with(&prefix) || r["frames"].split(';').next() == Some(function)
        })
        .unwrap_or_else(|| panic!("no row for {function}: {rows:?}"))
}

/// `[objects, requested, rounding, empty_region, pinned, held]` of a row.
fn bytes(row: &Row) -> [u64; 6] {
    [
        "objects",
        "requested_bytes",
        "rounding_bytes",
        "empty_region_bytes",
        "pinned_bytes",
        "held_bytes",
    ]
    .map(|c| num(row, c))
}

/// The rows add up to the total row, whose charged bytes are `active`; nothing unattributed.
fn check_adds_up(rows: &[Row], active: u64, what: &str) {
    let t = total(rows);
    assert_eq!(num(t, "charged_bytes"), active, "{what}: total vs active");
    for col in [
        "requested_bytes",
        "rounding_bytes",
        "empty_region_bytes",
        "held_bytes",
        "charged_bytes",
    ] {
        let sum: u64 = rows
            .iter()
            .filter(|r| r["site"] != "total")
            .map(|r| num(r, col))
            .sum();
        assert_eq!(sum, num(t, col), "{what}: {col}");
    }
    assert!(
        !rows.iter().any(|r| r["site"] == "[unattributed]"),
        "{what}: {rows:?}"
    );
}

fn committed_traces() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces");
    let mut traces = Vec::new();
    for dir in [root.clone(), root.join("threads")] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let ext = p.extension().and_then(|x| x.to_str());
            if matches!(ext, Some("trace") | Some("txt")) {
                traces.push(p);
            }
        }
    }
    traces.sort();
    traces
}

#[test]
fn charged_total_is_the_active_bytes_of_every_committed_trace() {
    let traces = committed_traces();
    assert!(traces.len() >= 6, "{traces:?}");
    for trace in &traces {
        let summary = process_summary(trace);
        let name = trace.display().to_string();
        let peak = blame(trace, &["--top", "5"]);
        check_adds_up(
            &peak,
            summary["peak_active_bytes"],
            &format!("{name} at the peak"),
        );
        let end = blame(trace, &["--at", "end", "--top", "5"]);
        check_adds_up(
            &end,
            summary["final_active_bytes"],
            &format!("{name} at the end"),
        );
        let at = blame(trace, &["--at", &summary["active_peak_event"].to_string()]);
        assert_eq!(
            at,
            blame(trace, &[]),
            "{name}: --at the peak's event is the peak"
        );
    }
}

#[test]
fn folded_stacks_and_flame_graph_carry_the_waste() {
    let dir = tempfile::tempdir().unwrap();
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces/cpp-threads-map.trace");
    let (folded, svg) = (dir.path().join("w.folded"), dir.path().join("w.svg"));
    let rows = blame(
        &trace,
        &[
            "--top",
            "1000",
            "--folded",
            s(&folded),
            "--flamegraph",
            s(&svg),
        ],
    );
    let text = std::fs::read_to_string(&folded).unwrap();
    let mut sum = 0;
    for line in text.lines() {
        let (stack, value) = line.rsplit_once(' ').expect("stack value");
        assert!(!stack.is_empty(), "{line}");
        sum += value.parse::<u64>().unwrap();
    }
    assert_eq!(sum, num(total(&rows), "waste_bytes"));
    // Outermost first: the worker threads' stacks start in libc's clone, end in operator new;
    // frames are functions, demangled (`_ZZ4mainENKUlvE_clEv` is main's lambda, `_Znwm`
    // operator new: `c++filt -p`).
    let worker = text
        .lines()
        .find(|l| l.contains("main::{lambda()#1}::operator()"))
        .expect("a worker's stack");
    assert!(
        worker.starts_with("/usr/lib/x86_64-linux-gnu/libc.so.6+0x"),
        "{worker}"
    );
    assert!(
        worker
            .rsplit_once(' ')
            .unwrap()
            .0
            .ends_with(";operator new"),
        "{worker}"
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("[thread caches]"),
        "not a flame graph"
    );
}

/// A text trace of the known-sites scenario on thread 1: 8 slabs' worth of 48-byte objects
/// with one kept per slab (site 0; the others from site 1, all freed), 100 objects of 1000
/// bytes allocated and freed (site 2), 8 objects of 4097 bytes kept (site 3), then the
/// thread exits (its cache is flushed and its block freed).
fn known_sites_text() -> String {
    let mut t = String::from(
        "s 0 keep_one;work\ns 1 scratch_one;work\ns 2 clean_one;work\ns 3 over_ask;work\nt 1\n",
    );
    let mut id = 0;
    let mut scratch = Vec::new();
    for _ in 0..8 {
        for _ in 0..255 {
            t += &format!("a {id} 48 @1\n");
            scratch.push(id);
            id += 1;
        }
        t += &format!("a {id} 48 @0\n");
        id += 1;
    }
    for i in scratch {
        t += &format!("f {i}\n");
    }
    for i in 0..100 {
        t += &format!("a {} 1000 @2\n", id + i);
    }
    for i in 0..100 {
        t += &format!("f {}\n", id + i);
    }
    id += 100;
    for i in 0..8 {
        t += &format!("a {} 4097 @3\n", id + i);
    }
    t + "x\n"
}

/// The hand-derived blame of the known sites once the thread has exited.
/// keep_one: 8 objects of 48 bytes, no rounding; each is alone in its 12,288-byte slab
/// (the 255 others of the slab were freed), so the 255 free regions, 12,240 bytes a slab,
/// are its: 8 x 12,240 = 97,920, and it pins the 8 slabs: 98,304.
/// over_ask: 8 x 4,097 = 32,776 requested; class 5120 rounds 1,023 each: 8,184; the 8
/// objects fill 2 slabs of 4 exactly: no free region, 2 x 20,480 = 40,960 pinned.
/// clean_one, scratch_one: nothing.
fn check_known_sites(rows: &[Row]) {
    assert_eq!(
        bytes(site(rows, "keep_one")),
        [8, 384, 0, 97_920, 98_304, 0]
    );
    assert_eq!(
        bytes(site(rows, "over_ask")),
        [8, 32_776, 8_184, 0, 40_960, 0]
    );
    assert_eq!(bytes(site(rows, "clean_one")), [0; 6]);
    assert_eq!(bytes(site(rows, "scratch_one")), [0; 6]);
}

#[test]
fn hand_written_known_sites_are_charged_as_derived_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("known.txt");
    std::fs::write(&trace, known_sites_text()).unwrap();
    let rows = blame(&trace, &["--at", "end"]);
    check_known_sites(&rows);
    // Thread 1 was the only thread: its cache and block are gone, the two sites' slabs are
    // all that is active: 98,304 + 40,960.
    check_adds_up(&rows, 139_264, "known sites at the end");
    let t = total(&rows);
    assert_eq!(num(t, "waste_bytes"), 97_920 + 8_184);
}

#[test]
fn thread_caches_blocks_and_padding_are_lines_of_their_own() {
    // One 48-byte object (site 0) and one of 49 bytes (site 1, one past the 48 class), then
    // the first is freed; blamed after event 2, both live.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("tc.txt");
    std::fs::write(&trace, "s 0 main\ns 1 over\na 0 48 @0\na 1 49 @1\nf 0\n").unwrap();
    let rows = blame(&trace, &["--at", "2"]);
    // By hand (jemalloc 5.3.1, tcache.c): the thread's first call allocates its cache block:
    // 16 + 8 x (sum of ncached_max) = 16 + 8 x (2,996 over the 36 small bins, each 2 x nregs
    // clamped to [20, 200], + 5 large bins x 20) = 24,784 bytes, 7 pages = 28,672, large,
    // so one padding page of 4,096. The 48-byte bin fills ncached_max / 2 = 100 regions of a
    // fresh slab and hands out one: 156 free regions, 7,488 bytes, split 1 : 99 between the
    // site and the cache: 74.88 and 7,413.12, the byte left to the larger remainder (the
    // site): 75 and 7,413. The 64-byte bin fills 64 regions, the whole 4 KiB slab: no free
    // region, 1 object live (49 asked, 15 rounding), 63 cached.
    assert_eq!(bytes(site(&rows, "main")), [1, 48, 0, 75, 0, 0]);
    assert_eq!(bytes(site(&rows, "over")), [1, 49, 15, 0, 0, 0]);
    let line = |name: &str| bytes(rows.iter().find(|r| r["site"] == name).unwrap());
    assert_eq!(
        line("[thread caches]"),
        [99 + 63, 0, 0, 7_413, 0, 99 * 48 + 63 * 64]
    );
    assert_eq!(line("[cache blocks]"), [1, 0, 0, 0, 0, 28_672]);
    assert_eq!(line("[large padding]"), [1, 0, 0, 0, 0, 4_096]);
    // Active: the block with its padding page, a 48-byte slab, a 64-byte slab.
    check_adds_up(&rows, 32_768 + 12_288 + 4_096, "thread caches");
}

#[test]
fn a_trace_without_sites_is_charged_by_size_class() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("classes.txt");
    // 3 objects of 40 bytes (class 48) and one of 100 (class 112), on one thread.
    std::fs::write(&trace, "a 0 40\na 1 40\na 2 40\na 3 100\n").unwrap();
    let rows = blame(&trace, &["--at", "end", "--malloc-conf", "tcache:false"]);
    // Without a cache: one 12 KiB slab of 48 with 3 used regions (253 free, 12,144 bytes),
    // one 28 KiB slab of 112 (28,672 = 256 x 112) with one (255 free, 28,560 bytes).
    assert_eq!(
        bytes(rows.iter().find(|r| r["site"] == "class 48").unwrap()),
        [3, 120, 24, 12_144, 12_288, 0]
    );
    assert_eq!(
        bytes(rows.iter().find(|r| r["site"] == "class 112").unwrap()),
        [1, 100, 12, 28_560, 28_672, 0]
    );
    check_adds_up(&rows, 12_288 + 28_672, "by class");
}

fn compiler_and_unwinder() -> bool {
    let unwind = Path::new("/usr/lib/x86_64-linux-gnu/libunwind.so.8").exists();
    let cc = Command::new("cc").arg("--version").output().is_ok();
    if !unwind || !cc {
        eprintln!("SKIPPED: needs cc and libunwind8 (apt-get install build-essential libunwind8)");
    }
    unwind && cc
}

#[test]
fn recorded_program_with_known_sites_is_charged_as_derived_by_hand() {
    if !compiler_and_unwinder() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("blame_sites");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native_programs/blame_sites.c");
    let cc = Command::new("cc")
        .args(["-O0", "-g", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let trace = dir.path().join("blame.trace");
    let out = fragsim()
        .args(["record", "--stacks", "-o", s(&trace), "--", s(&exe)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    // At the end the worker has exited (its cache flushed): the hand-derived figures of
    // `check_known_sites`; the main thread's start-up lines are the program's and libc's.
    let rows = blame(&trace, &["--at", "end", "--top", "100"]);
    check_known_sites(&rows);
    check_adds_up(
        &rows,
        process_summary(&trace)["final_active_bytes"],
        "recorded",
    );
}

#[test]
fn bad_at_values_exit_2_naming_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let trace = common::text_trace(dir.path());
    for (at, names) in [
        ("--at=abc", "'abc'"),
        ("--at=0", "'0'"),
        ("--at=1.5", "'1.5'"),
        ("--at=-3", "'-3'"),
        ("--at=99", "--at 99"),
    ] {
        let out = fragsim()
            .args(["replay", s(&trace), "--blame", at])
            .output()
            .unwrap();
        assert_refused(&out, names);
    }
    let out = fragsim()
        .args(["replay", s(&trace), "--blame", "--flamegraph", s(&trace)])
        .output()
        .unwrap();
    assert_refused(&out, "--flamegraph");
    let before = std::fs::read(&trace).unwrap();
    let out = fragsim()
        .args(["replay", s(&trace), "--blame", "--folded", s(&trace)])
        .output()
        .unwrap();
    assert_refused(&out, "--folded");
    assert_eq!(std::fs::read(&trace).unwrap(), before, "the trace was kept");
    let out = fragsim()
        .args(["replay", s(&trace), "--blame", "--live"])
        .output()
        .unwrap();
    assert_refused(&out, "--live");
}

#[test]
fn report_section_blames_every_committed_trace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("charts")).unwrap();
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces");
    let section = fragsim::report::write_blame_section(dir.path(), &traces).unwrap();
    for name in ["cpp-threads-map", "python-threads"] {
        let csv = std::fs::read_to_string(dir.path().join(format!("blame-{name}.csv"))).unwrap();
        let rows = csv_rows(&csv);
        // The section runs the linked build with 2 CPUs, as BUILD does here.
        let summary = process_summary(&traces.join(format!("{name}.trace")));
        check_adds_up(&rows, summary["peak_active_bytes"], name);
        let svg = std::fs::read_to_string(dir.path().join(format!("charts/blame-{name}.svg")));
        assert!(svg.unwrap().contains("<svg"), "{name}: flame graph");
        assert!(section
            .markdown
            .contains(&format!("charts/blame-{name}.svg")));
    }
    // A single-threaded trace without sites is charged by size class.
    let sort = std::fs::read_to_string(dir.path().join("blame-sort.csv")).unwrap();
    assert!(
        sort.lines().nth(1).is_some_and(|l| l.starts_with("class ")),
        "{sort}"
    );
}

/// Issue 37 §2: the blame in the formats other tools open. On the hand-written known sites
/// (at the end: `check_known_sites`' figures), speedscope's profiles, one per kind, weigh
/// exactly the total row's column, and `go tool pprof` (Debian's golang-go; skipped with a
/// message where absent) reads the pprof profile back: its top entry by waste is the site
/// the table puts first, with the same bytes, and by requested bytes over_ask's 32,776.
#[test]
fn pprof_and_speedscope_profiles_carry_the_blame() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("known.txt");
    std::fs::write(&trace, known_sites_text()).unwrap();
    let (pprof, speedscope) = (dir.path().join("w.pb.gz"), dir.path().join("w.json"));
    let rows = blame(
        &trace,
        &[
            "--at",
            "end",
            "--pprof",
            s(&pprof),
            "--speedscope",
            s(&speedscope),
        ],
    );
    check_known_sites(&rows);
    let total = total(&rows);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&speedscope).unwrap()).unwrap();
    let frames = doc["shared"]["frames"].as_array().unwrap();
    let names: Vec<&str> = frames.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"keep_one") && names.contains(&"work"),
        "{names:?}"
    );
    for (profile, column) in doc["profiles"].as_array().unwrap().iter().zip([
        "waste_bytes",
        "requested_bytes",
        "rounding_bytes",
        "empty_region_bytes",
        "pinned_bytes",
        "held_bytes",
        "objects",
    ]) {
        let weights: u64 = profile["weights"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_u64().unwrap())
            .sum();
        assert_eq!(weights, num(total, column), "{column}: {}", profile["name"]);
        // Every sample is a stack of frame indices, outermost (`work`) first.
        for sample in profile["samples"].as_array().unwrap() {
            assert_eq!(names[sample[0].as_u64().unwrap() as usize], "work");
        }
    }
    if Command::new("go").arg("version").output().is_err() {
        eprintln!("SKIPPED the pprof read-back: needs go (apt-get install golang-go)");
        return;
    }
    let top = |index: &str| -> Vec<String> {
        let out = Command::new("go")
            .args(["tool", "pprof", "-top", "-unit=B", "-sample_index", index])
            .arg(&pprof)
            .env("HOME", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        let text = stdout_of(&out);
        // The first row after the column header `flat flat% sum% cum cum%`.
        let first = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("flat"))
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"))
            .to_string();
        first.split_whitespace().map(String::from).collect()
    };
    let first = &rows[0];
    let leaf = first["frames"].split(';').next().unwrap();
    let by_waste = top("waste");
    assert_eq!(
        (by_waste[0].as_str(), by_waste.last().unwrap().as_str()),
        (format!("{}B", first["waste_bytes"]).as_str(), leaf),
        "{by_waste:?}"
    );
    let by_requested = top("requested");
    assert_eq!(by_requested[0], "32776B");
    assert_eq!(by_requested.last().unwrap(), "over_ask");
}

/// Mappings (a recorded trace's `m` lines) are not events: `--at N` charges the model after
/// the N-th call, as `replay --process` counts them. Before, each mapping counted, so `--at 1`
/// on this trace stopped before its first call (0 bytes) and `--at 3` after its second.
#[test]
fn mappings_are_not_events_for_at() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("m.txt");
    std::fs::write(
        &trace,
        "m 0x7f0000000000 8388608\na 0 16\nm 0x7f0000800000 8388608\na 1 5000\na 2 100\n",
    )
    .unwrap();
    let charged = |at: &str| num(total(&blame(&trace, &["--at", at])), "charged_bytes");
    // After the first call: its thread's cache block and one slab (as in
    // `no_thread_cache_saves_the_cache_block_by_hand`, tests/advise.rs): 36,864 bytes.
    assert_eq!(charged("1"), 36_864);
    // After the last: what `replay --process` says the trace ends with.
    assert_eq!(charged("3"), process_summary(&trace)["final_active_bytes"]);
    assert_ne!(charged("2"), charged("3"));
}

/// The blames at several moments from one reading (`fragsim view`'s slider) are the blames
/// at each moment read one by one.
#[test]
fn blames_at_several_moments_equal_one_blame_each() {
    use fragsim::blame::{blame_moments, blame_stream, At, BlameSpec};
    use fragsim::process::ProcessOptions;
    use fragsim::sizeclass::Preset;
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces/cpp-threads-map.trace");
    let source = fragsim::analysis::TraceSource::File(&trace);
    let spec = |at| BlameSpec {
        config: Preset::V5_3_1.config(),
        options: ProcessOptions::parse("experimental_tcache_gc:false").unwrap(),
        cpus: 2,
        at,
    };
    let events = [1, 5_000, 42_126, 62_426];
    let many = blame_moments(source, &spec(At::End), &events).unwrap();
    assert_eq!(many.len(), events.len());
    for (b, &e) in many.iter().zip(&events) {
        let one = blame_stream(source, &spec(At::Event(e))).unwrap();
        assert_eq!((b.event, b.active_bytes), (one.event, one.active_bytes));
        assert_eq!(b.lines, one.lines, "event {e}");
    }
}

/// Issue 37 §3: the answer comes first. The table's title says the active bytes, how much of
/// them is waste and of which kind, and the line with the most, before the long table: on the
/// known sites at the end, from `check_known_sites`' hand-derived figures: rounding 8,184,
/// empty regions 97,920, nothing held (the thread exited), so 106,104 of 139,264 active bytes
/// (76.2%), the most at keep_one's site.
#[test]
fn the_title_answers_first_how_much_is_waste_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("known.txt");
    std::fs::write(&trace, known_sites_text()).unwrap();
    let out = fragsim()
        .args(["replay", s(&trace), "--blame", "--at", "end"])
        .args(BUILD)
        .output()
        .unwrap();
    let text = stdout_of(&out);
    let title = text.lines().next().unwrap();
    assert!(
        title.contains("139,264 active bytes, 106,104 of them waste (76.2%: rounding 8,184, empty regions 97,920, held 0); the most, 97,920, in site 0 (keep_one;work)"),
        "{title}"
    );
}

/// `replay --process` answers first too: its title gives the active peak, the requested
/// bytes then and the waste split as jemalloc's statistics split it; on the committed C++
/// trace the waste equals the blame's total waste at the same peak (two separate paths:
/// allocated and active bytes against the blame's charged lines).
#[test]
fn the_process_summary_title_answers_first_with_the_blames_waste() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces/cpp-threads-map.trace");
    let out = fragsim()
        .args(["replay", s(&trace), "--process"])
        .args(BUILD)
        .output()
        .unwrap();
    let title = stdout_of(&out).lines().next().unwrap().to_string();
    let rows = blame(&trace, &[]);
    let t = total(&rows);
    let thousands = |n: u64| fragsim::export::thousands(n);
    let expected = format!(
        "peak active {} bytes at event 42,126: requested {} (",
        thousands(num(t, "charged_bytes")),
        thousands(num(t, "requested_bytes"))
    );
    assert!(title.contains(&expected), "{expected} in {title}");
    assert!(
        title.contains(&format!("; waste {} (", thousands(num(t, "waste_bytes")))),
        "{title}"
    );
}

/// Issue 37 §3: a Markdown table shows each site's first frames of the program's own
/// (`--depth`, 4 by default; allocator entry points, libc, libstdc++ and the loader left
/// out), CSV the whole stack. The committed C++ trace's first site is `operator new` called
/// from the worker lambda, under libstdc++'s and libc's thread start (its CSV row).
#[test]
fn markdown_tables_show_the_programs_own_frames() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces/cpp-threads-map.trace");
    let rows = blame(&trace, &[]);
    assert!(
        rows[0]["frames"].starts_with("operator new+0x1b;main::{lambda()#1}::operator() const+0xd3e;/usr/lib/x86_64-linux-gnu/libstdc++"),
        "{}",
        rows[0]["frames"]
    );
    let md = |depth: &str| {
        let out = fragsim()
            .args(["replay", s(&trace), "--blame", "--depth", depth])
            .args(BUILD)
            .output()
            .unwrap();
        stdout_of(&out)
    };
    assert!(
        md("4").contains("| 8 | main::{lambda()#1}::operator() const+0xd3e | 6,004 |"),
        "{}",
        md("4")
    );
    // Site 5: two string frames, then the lambda; one frame of depth keeps the first.
    let one = md("1");
    let line = one.lines().find(|l| l.starts_with("| 5 |")).unwrap();
    assert!(line.contains("_M_mutate+0x5d |"), "{line}");
    let out = fragsim()
        .args(["replay", s(&trace), "--blame", "--depth", "0"])
        .output()
        .unwrap();
    assert_refused(&out, "--depth 0");
}
