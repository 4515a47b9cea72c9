//! Every committed trace (data/traces/*.trace) replayed through the model and the real
//! jemalloc, every event compared: the linked 5.3.1 with both disable_large_size_classes
//! settings, and Debian's 5.3.0 where its libjemalloc2 is installed.

use fragsim::check::{replay_compare, LiveAllocator, LiveOptions};
use fragsim::trace::Record;
use fragsim::trace::{Event, TraceReader};
use std::path::{Path, PathBuf};

const DEBIAN_JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

fn traces() -> Vec<(PathBuf, Vec<Event>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no traces in {}", dir.display());
    paths
        .into_iter()
        .map(|p| {
            let events = TraceReader::open(&p)
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            (p, events)
        })
        .collect()
}

fn check_all(allocator: LiveAllocator) {
    for (path, events) in traces() {
        let options = LiveOptions {
            every: 1,
            allocator: allocator.clone(),
            child_exe: Some(env!("CARGO_BIN_EXE_fragsim").into()),
            keep: 5,
        };
        let r = replay_compare(&Record::plain_calls(&events), &options).unwrap();
        let c = &r.comparison;
        assert_eq!(c.snapshots, events.len() as u64, "{}", path.display());
        assert!(
            c.is_exact(),
            "{} on {allocator:?}: {} of {} values differ, first {:?}",
            path.display(),
            c.mismatched_values,
            c.values,
            c.first
        );
    }
}

#[test]
fn committed_traces_match_jemalloc_5_3_1_page_rounded() {
    check_all(LiveAllocator::LinkedWith(true));
}

#[test]
fn committed_traces_match_jemalloc_5_3_1_large_classes() {
    check_all(LiveAllocator::LinkedWith(false));
}

#[test]
fn committed_traces_match_debian_jemalloc_5_3_0() {
    if !Path::new(DEBIAN_JEMALLOC).is_file() {
        eprintln!("skipped: {DEBIAN_JEMALLOC} (Debian libjemalloc2) is not installed");
        return;
    }
    check_all(LiveAllocator::System(DEBIAN_JEMALLOC.into()));
}
