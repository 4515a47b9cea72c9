//! Issue 40 §5: calls made inside another allocator call of the same thread. A program on
//! Debian's jemalloc 5.3.0 turns background threads on with `mallctl`; glibc's `pthread_create`
//! then allocates inside it, and jemalloc serves that call reentrantly (arena 0, no thread
//! cache). The recorder marks it (it interposes `mallctl`), the trace carries the mark, and the
//! process model serves it as jemalloc does: its allocated and active bytes equal those the
//! program read from its allocator. Before the mark, the model took the call from the cache:
//! 320 allocated bytes and a 20,480-byte slab less than the real allocator.

mod common;

use fragsim::process::{machine_cpus, Process, ProcessOptions};
use fragsim::trace::{Call, Event, Record};
use std::path::Path;
use std::process::Command;

const JEMALLOC_HEADER: &str = "/usr/include/jemalloc/jemalloc.h";

/// The process model (Debian's 5.3.0 build, `conf`) after the trace's free of the marker
/// block (malloc(54321)): allocated and active bytes, and the reentrant calls before it.
fn model_at_marker(trace: &Path, conf: &str) -> (u64, u64, usize) {
    let options = ProcessOptions::parse(conf).unwrap();
    let config = fragsim::sizeclass::Preset::V5_3_0.config();
    let mut model = Process::new(config, options, machine_cpus()).unwrap();
    let (mut marker, mut reentrant) = (None, 0);
    for record in fragsim::trace::open(trace).unwrap().records() {
        let record = record.unwrap();
        model.apply(&record).unwrap();
        if let Record::Call(call @ Call { event, .. }) = record {
            reentrant += usize::from(call.reentrant);
            match event {
                Event::Alloc {
                    id, size: 54321, ..
                } => marker = Some(id),
                Event::Free { id } if Some(id) == marker => {
                    let s = model.snapshot();
                    return (s.allocated_bytes, s.active_bytes, reentrant);
                }
                _ => {}
            }
        }
    }
    panic!("{}: no marker block freed", trace.display());
}

#[test]
fn a_call_inside_mallctl_is_served_as_jemalloc_serves_it() {
    if !Path::new(JEMALLOC_HEADER).exists() {
        eprintln!("SKIPPED: needs libjemalloc-dev ({JEMALLOC_HEADER})");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("background_thread");
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native_programs/background_thread.c");
    let built = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(source)
        .arg("-ljemalloc")
        .status()
        .unwrap();
    assert!(built.success(), "compiling background_thread.c");
    // Decay off: the background thread purges on its own clock, which moves no active page
    // but would make the run's other statistics timing-dependent.
    for conf in [
        "dirty_decay_ms:-1,muzzy_decay_ms:-1",
        "tcache:false,dirty_decay_ms:-1,muzzy_decay_ms:-1",
    ] {
        let trace = dir.path().join("t.trace");
        let out = common::fragsim()
            .env("MALLOC_CONF", conf)
            .args(["record", "-o"])
            .arg(&trace)
            .arg("--")
            .arg(&exe)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{conf}: {}", common::stderr_of(&out));
        let real: Vec<u64> = stdout
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect();
        assert_eq!(real[0], 0, "{conf}: mallctl(\"background_thread\") failed");
        let (allocated, active, reentrant) = model_at_marker(&trace, conf);
        // glibc's pthread_create allocates the new thread's vector (calloc) at least.
        assert!(reentrant >= 1, "{conf}: no reentrant call recorded");
        assert_eq!((allocated, active), (real[1], real[2]), "{conf}");
    }
}

/// jemalloc's own background thread 0 starting its siblings (`background_siblings.c`):
/// glibc's `pthread_create` allocates on that thread, outside any call the program made. The
/// recorder knows the thread by its name and marks its calls reentrant; the model serves them
/// from arena 0 without starting the thread (no cache block for it, which would be 28,672
/// bytes too many in both figures), and applies the `background_thread` write where the
/// recording has it. Golden values: the program's own statistics at its end.
#[test]
fn a_background_threads_own_calls_are_served_as_jemalloc_serves_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::jemalloc_program(dir.path(), "background_siblings", &["-lpthread"])
    else {
        return;
    };
    // glibc does not always allocate as a thread starts (it can hand a new thread a vector it
    // keeps): up to 5 recordings, until one has the background thread's calls.
    for attempt in 1..=5 {
        let (internal, marked_all) = record_siblings(dir.path(), &exe);
        assert!(
            marked_all,
            "attempt {attempt}: a thread past the workers has unmarked calls"
        );
        if internal == 1 {
            return;
        }
        eprintln!("attempt {attempt}: the background thread made no call");
    }
    panic!("in 5 recordings the background thread made no call");
}

/// Records `background_siblings` once and checks the model against its own statistics:
/// how many threads made only marked calls, and whether every thread past the program's
/// own four made only marked ones.
fn record_siblings(dir: &Path, exe: &Path) -> (usize, bool) {
    let trace = dir.join("b.trace");
    let out = common::fragsim()
        .env("MALLOC_CONF", "dirty_decay_ms:-1,muzzy_decay_ms:-1")
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(exe)
        .output()
        .unwrap();
    let real = common::stderr_of(&out);
    assert!(out.status.success(), "{real}");
    assert_eq!(
        common::program_stat(&real, "stats.background_thread.num_threads"),
        4,
        "thread 0 and one per arena group of arenas 1 to 3"
    );
    let text = common::dump(&trace);
    assert!(text.lines().any(|l| l == "c background on"), "{text}");
    let (mut thread, mut calls, mut marked) = (0u32, [0u32; 8], [0u32; 8]);
    let mut mark = false;
    for l in text.lines() {
        if let Some(t) = l.strip_prefix("t ") {
            thread = t.parse().unwrap();
        } else if l == "e" {
            mark = true;
        } else if l.starts_with("a ") || l.starts_with("f ") || l.starts_with("r ") {
            calls[thread as usize] += 1;
            marked[thread as usize] += u32::from(mark);
            mark = false;
        }
    }
    let internal = (1..8)
        .filter(|&t| calls[t] > 0 && marked[t] == calls[t])
        .count();
    let marked_all = (4..8).all(|t| marked[t] == calls[t]);
    let replay = common::replay_process(&trace, &[]);
    common::assert_figures(&replay, &real, &common::FINAL_FIGURES[..2], "");
    (internal, marked_all)
}
