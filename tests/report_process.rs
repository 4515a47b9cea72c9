//! The report's "Whole process" section on the committed traces with threads: the process
//! model beside the one-arena model, per arena, and the live check of the process model
//! (golden values: the live jemalloc's statistics, read by the baton replay child).

use std::path::{Path, PathBuf};

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fragsim"))
}

fn rows(dir: &Path, file: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn whole_process_section_has_every_threaded_trace_and_no_live_mismatch() {
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces");
    let out = tempfile::tempdir().unwrap();
    let section =
        fragsim::report::process::write_section(out.path(), &traces, Some(&exe())).unwrap();
    let files: Vec<&str> = section.files.iter().map(|w| w.file.as_str()).collect();
    for f in [
        "process-summary.csv",
        "process-per-arena.csv",
        "process-live.csv",
    ] {
        assert!(files.contains(&f), "{files:?}");
    }
    let summary = rows(out.path(), "process-summary.csv");
    let names: Vec<&str> = summary.iter().map(|r| r[0].as_str()).collect();
    // The two committed recordings with threads, and none of the one-thread traces.
    assert_eq!(names, ["cpp-threads-map", "python-threads"]);
    for r in &summary {
        assert_eq!(r[1], "5", "{r:?}: threads");
        let one: u64 = r[3].parse().unwrap();
        let whole: u64 = r[5].parse().unwrap();
        // Thread caches and several arenas only add partly used slabs.
        assert!(whole > one, "{r:?}");
    }
    let per_arena = rows(out.path(), "process-per-arena.csv");
    assert!(
        per_arena
            .iter()
            .filter(|r| r[0] == "cpp-threads-map")
            .count()
            >= 2
    );
    let live = rows(out.path(), "process-live.csv");
    assert!(live.len() >= 2, "{live:?}");
    for r in &live {
        let values: u64 = r[4].parse().unwrap();
        assert!(values > 1_000_000, "{r:?}");
        assert_eq!(r[5], "0", "{r:?}: mismatches");
    }
}
