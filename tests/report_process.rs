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
fn whole_process_section_has_every_trace_and_no_live_mismatch() {
    // The committed traces with threads and one with a single thread (the section reads a
    // folder; the large one-thread traces would only add time).
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces");
    let traces = tempfile::tempdir().unwrap();
    for name in ["c-thread-pool", "cpp-threads-map", "python-threads", "sort"] {
        let file = format!("{name}.trace");
        std::fs::copy(data.join(&file), traces.path().join(&file)).unwrap();
    }
    let traces = traces.path();
    let out = tempfile::tempdir().unwrap();
    let section = fragsim::report::write_process_section(out.path(), traces, Some(&exe())).unwrap();
    let files: Vec<&str> = section.files.iter().map(|w| w.file.as_str()).collect();
    for f in [
        "process-summary.csv",
        "process-per-arena.csv",
        "process-live.csv",
    ] {
        assert!(files.contains(&f), "{files:?}");
    }
    let summary = rows(out.path(), "process-summary.csv");
    // Two rows per trace, the analyses' own column names: the one-arena model, the process.
    let names: Vec<&str> = summary
        .iter()
        .filter(|r| r[1] == "process")
        .map(|r| r[0].as_str())
        .collect();
    assert_eq!(
        names,
        ["c-thread-pool", "cpp-threads-map", "python-threads", "sort"]
    );
    assert_eq!(summary.len(), 8);
    // Threads counted on the recordings (fragsim trace stats, data/traces/README.md).
    let threads: Vec<&str> = summary
        .iter()
        .filter(|r| r[1] == "process")
        .map(|r| r[2].as_str())
        .collect();
    assert_eq!(threads, ["4", "5", "5", "1"]);
    for pair in summary.chunks(2) {
        let (one, whole) = (&pair[0], &pair[1]);
        assert_eq!(
            (one[0].as_str(), one[1].as_str()),
            (whole[0].as_str(), "one arena")
        );
        if whole[2] != "1" {
            let (one, whole): (u64, u64) = (one[4].parse().unwrap(), whole[4].parse().unwrap());
            // Thread caches and several arenas only add partly used slabs.
            assert!(whole > one, "{pair:?}");
        }
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
    // Every trace under each jemalloc here (the linked 5.3.1, Debian's 5.3.0 if installed).
    assert!(live.len() >= 4, "{live:?}");
    for name in names {
        assert!(live.iter().any(|r| r[0] == name), "{name}: {live:?}");
    }
    for r in &live {
        let values: u64 = r[4].parse().unwrap();
        assert!(values > 5_000, "{r:?}");
        assert_eq!(r[5], "0", "{r:?}: mismatches");
    }
}
