//! `fragsim trace import|dump|stats` and `fragsim record` end to end, on hand-written input
//! (hand-computed results), the committed real traces, and bad input (exit 2, one line, no
//! output file).

mod common;

use common::{
    assert_refused_naming, dump, have_valgrind, import_from, import_text, record_valgrind, run,
    run_env, run_ok, s,
};
use fragsim::trace::{trace_stats, TraceReader};
use std::path::PathBuf;

const HAND: &str = "# a hand-written trace\na 0 100\na 1 50\nr 0 300\nf 1\na 1 8 64\na 2 0\nf 0\n";

/// [`HAND`] imported into `dir`, and its canonical text (the comment dropped).
fn hand_trace(dir: &std::path::Path) -> (PathBuf, String) {
    let text = dir.join("hand.txt");
    let trace = dir.join("hand.trace");
    std::fs::write(&text, HAND).unwrap();
    import_text(&text, &trace);
    (
        trace,
        HAND.lines().skip(1).map(|l| format!("{l}\n")).collect(),
    )
}

#[test]
fn text_import_dump_is_identity_and_stats_are_hand_computed() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, canonical) = hand_trace(dir.path());
    assert_eq!(dump(&trace), canonical);

    // By hand: requested bytes 100, 150, 350 (realloc), 300, 308, 308, 8; live 1, 2, 2, 1, 2,
    // 3, 2. Sizes: 100 in (64,128], 50 in (32,64], 8 in (4,8], 0 alone; realloc 300 in
    // (256,512].
    let csv = run_ok(&["trace", "stats", s(&trace), "--format", "csv"]);
    let row = csv.lines().nth(1).unwrap();
    assert_eq!(
        csv.lines().next().unwrap(),
        "trace,events,allocs,frees,reallocs,max_live_objects,peak_requested_bytes,final_requested_bytes,threads,events_per_thread,cross_thread_frees,duration_ns,sites,command,recording,allocator"
    );
    // One thread with all 7 calls, no times, no sites.
    assert_eq!(row, format!("{},7,4,2,1,3,350,8,1,7,0,,0,,,", s(&trace)));
    let hist = run_ok(&[
        "trace",
        "stats",
        s(&trace),
        "--histogram",
        "--format",
        "csv",
    ]);
    let rows: Vec<String> = hist
        .lines()
        .skip(1)
        .map(|l| l.split_once(',').unwrap().1.to_string())
        .collect();
    assert_eq!(
        rows,
        [
            "0,0,1,0,0,0.2500",
            "5,8,1,0,8,0.2500",
            "33,64,1,0,50,0.2500",
            "65,128,1,0,100,0.2500",
            "257,512,0,1,0,0.0000"
        ]
    );
    let json = run_ok(&["trace", "stats", s(&trace), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["rows"][0]["peak_requested_bytes"], 350);
}

fn committed_traces() -> Vec<PathBuf> {
    let mut traces: Vec<PathBuf> =
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/data/traces"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "trace"))
            .collect();
    traces.sort();
    traces
}

#[test]
fn committed_traces_are_small_consistent_and_one_is_large() {
    let traces = committed_traces();
    // Four single-thread traces and the native recorder's multi-threaded ones.
    assert!((3..=8).contains(&traces.len()), "{traces:?}");
    let mut largest = 0;
    for path in &traces {
        let bytes = std::fs::metadata(path).unwrap().len();
        assert!(bytes < 2 << 20, "{path:?} is {bytes} bytes");
        let reader = TraceReader::open(path).unwrap();
        let h = *reader.header();
        let st = trace_stats(reader).unwrap();
        // The header's counts agree with a full recount, and ids were assigned
        // lowest-free-first (the table a replayer needs is exactly the peak live count).
        assert_eq!(
            (
                st.events,
                st.allocs,
                st.frees,
                st.reallocs,
                st.max_live_objects
            ),
            (h.events, h.allocs, h.frees, h.reallocs, h.peak_live_objects),
            "{path:?}"
        );
        assert_eq!(st.peak_requested_bytes, h.peak_requested_bytes as u128);
        assert_eq!(h.id_limit, h.peak_live_objects, "{path:?}");
        assert!(st.events > 500, "{path:?}");
        largest = largest.max(st.events);
    }
    assert!(largest >= 200_000, "largest trace has {largest} events");
}

#[test]
fn committed_trace_round_trips_through_text() {
    let dir = tempfile::tempdir().unwrap();
    let trace = committed_traces()
        .into_iter()
        .find(|p| p.ends_with("git-log.trace"))
        .unwrap();
    let text = dump(&trace);
    let txt = dir.path().join("t.txt");
    let again = dir.path().join("again.trace");
    std::fs::write(&txt, &text).unwrap();
    import_text(&txt, &again);
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        std::fs::read(&again).unwrap()
    );
}

#[test]
fn bad_input_exits_2_with_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.trace");
    let text = dir.path().join("hand.txt");
    std::fs::write(&text, HAND).unwrap();
    import_text(&text, &good);
    let bytes = std::fs::read(&good).unwrap();

    let truncated = dir.path().join("truncated.trace");
    std::fs::write(&truncated, &bytes[..bytes.len() - 2]).unwrap();
    assert_refused_naming(
        &run(&["trace", "stats", s(&truncated)]),
        &["truncated.trace", "truncated at byte"],
    );
    let magic = dir.path().join("magic.trace");
    std::fs::write(&magic, b"hello world, not a trace").unwrap();
    assert_refused_naming(
        &run(&["trace", "dump", s(&magic)]),
        &["magic.trace", "not a trace"],
    );
    let mut v9 = bytes.clone();
    v9[8] = 9;
    let version = dir.path().join("version.trace");
    std::fs::write(&version, &v9).unwrap();
    assert_refused_naming(
        &run(&["trace", "stats", s(&version)]),
        &["version.trace", "version 9"],
    );

    let out = dir.path().join("out.trace");
    let bad_text = dir.path().join("bad.txt");
    std::fs::write(&bad_text, "a 0 8\na 99999999999 8\n").unwrap();
    assert_refused_naming(
        &import_from("text", &bad_text, &out),
        &["bad.txt", "line 2", "id 99999999999 is out of range"],
    );
    std::fs::write(&bad_text, "a 0 8\na 1 eight\n").unwrap();
    assert_refused_naming(
        &import_from("text", &bad_text, &out),
        &["bad.txt", "line 2", "size 'eight'"],
    );
    let log = dir.path().join("empty.log");
    std::fs::write(&log, "==1== nothing allocated here\n").unwrap();
    assert_refused_naming(
        &import_from("valgrind", &log, &out),
        &["empty.log", "no allocation calls"],
    );
    std::fs::write(&log, "--1-- malloc(8) = 0x10\n--1-- malloc(x) = 0x20\n").unwrap();
    assert_refused_naming(
        &import_from("valgrind", &log, &out),
        &["empty.log", "line 2", "size 'x'"],
    );
    assert!(!out.exists(), "no half-written output");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        7,
        "no temporary files left behind"
    );

    let unwritable = dir.path().join("no/such/dir/x.trace");
    assert_refused_naming(
        &import_from("text", &text, &unwritable),
        &["cannot write", "no/such/dir/x.trace"],
    );
    assert_refused_naming(&import_from("text", &text, dir.path()), &["cannot write"]);
    assert_refused_naming(
        &run(&["trace", "stats", "/no/such.trace"]),
        &["/no/such.trace"],
    );
}

#[test]
fn record_without_valgrind_says_how_to_install_it() {
    let empty = tempfile::tempdir().unwrap();
    let out = run_env(
        &[
            "record", "--with", "valgrind", "-o", "x.trace", "--", "true",
        ],
        &[("PATH", s(empty.path()))],
    );
    assert_refused_naming(
        &out,
        &["valgrind is not installed", "apt-get install valgrind"],
    );
}

#[test]
fn record_runs_a_program_under_valgrind() {
    if !have_valgrind() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("ls.trace");
    let out = record_valgrind(&trace, &["ls", "-l", "/"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("imported") && stderr.contains("allocs"),
        "{stderr}"
    );
    // The program's own output passes through.
    assert!(String::from_utf8_lossy(&out.stdout).contains("usr"));
    let h = *TraceReader::open(&trace).unwrap().header();
    assert!(h.allocs > 10 && h.events >= h.allocs, "{h:?}");
    let missing = dir.path().join("missing.trace");
    assert_refused_naming(
        &record_valgrind(&missing, &["/no/such/program"]),
        &["program '/no/such/program' not found"],
    );
    assert!(!missing.exists());
}

/// `trace dump -o FILE` writes what `trace dump` prints (hand-written trace, its canonical
/// text); into a FIFO it writes through the node (read back), never replacing it; a file
/// that is the trace itself is refused before anything is written.
#[test]
fn dump_to_a_file_a_fifo_and_never_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, canonical) = hand_trace(dir.path());
    let out = dir.path().join("dump.txt");
    run_ok(&["trace", "dump", s(&trace), "-o", s(&out)]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), canonical);

    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    run_ok(&["trace", "dump", s(&trace), "--out", s(&fifo)]);
    assert_eq!(reader.join().unwrap(), canonical);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());

    let before = std::fs::read(&trace).unwrap();
    let refused = run(&["trace", "dump", s(&trace), "-o", s(&trace)]);
    assert_refused_naming(&refused, &["--out", "would destroy it"]);
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        before,
        "the trace untouched"
    );
}
