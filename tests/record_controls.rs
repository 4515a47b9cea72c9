//! Issue 40 §5: `mallctl` writes that change what jemalloc holds or how it serves a thread
//! (`thread.tcache.flush`, `thread.arena`, `arena.<i>.purge`, `arena.<i>.decay`). The
//! recorder keeps each one that succeeds (`c ...` in the text form), the process model serves
//! it as `ctl.c` does, and the live child replays it through `mallctlbymib`. Golden values:
//! the real allocators' own statistics (a recorded C program's at its end, and every event of
//! live replays under the linked 5.3.1 and Debian's 5.3.0).

mod common;

use common::{program_stat, stderr_of, summary_row};
use fragsim::check::{compare_process_live, ProcessAllocator};
use fragsim::process::ProcessOptions;
use fragsim::trace::Record;
use std::path::{Path, PathBuf};

const DEBIAN_530: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

/// `records` under the linked 5.3.1 and Debian's 5.3.0 with `conf`, compared after every
/// event.
fn check_live(records: &[Record], conf: &str) {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_fragsim"));
    let mut allocators = vec![ProcessAllocator::Linked];
    if Path::new(DEBIAN_530).is_file() {
        allocators.push(ProcessAllocator::System(DEBIAN_530.into()));
    }
    let options = ProcessOptions::parse(conf).unwrap();
    for a in allocators {
        let r = compare_process_live(&exe, &a, records, &options, 1, 5).unwrap();
        assert!(
            r.comparison.is_exact(),
            "{a:?} {conf}: {} of {} values differ, first {:?}",
            r.comparison.mismatched_values,
            r.comparison.values,
            r.comparison.first
        );
    }
}

/// Every control on three threads: caches flushed with objects in them; a thread moved to an
/// automatic arena nobody made yet, to a manual one (recorded as 20), back; purges and decays
/// of one arena, of every arena, and of a manual arena before any call used it; a new
/// thread whose first record is a control (the call starts it); then the choice of a new
/// thread's arena, which the moves changed (the internal binding's arena, left without
/// threads below arenas with threads, is chosen first); caches turned off (destroyed, the
/// thread staying in its arena) and on again, one by a thread that started without one.
const CONTROLS: &str = "\
t 0\na 0 100\na 1 100\na 2 3000\na 3 20000\na 4 40000\nf 0\nf 1\nf 2\nf 3\nc flush\na 5 100\n\
f 4\nc purge all\nt 1\nc purge 21\na 6 64\nf 6\nc arena 3\na 7 64\na 8 5000\nf 7\nc flush\n\
c purge 1\nt 2\nc arena 1\na 9 200\nj 0x1500000\na 10 300\nc purge 20\nc decay 20\nc arena 20\n\
a 11 500\nf 11\nc flush\nc arena 2\nc tcache off\na 12 700\nc tcache on\nt 1\nx\nt 2\nc arena 20\nt 3\n\
c tcache off\na 13 100\nt 4\na 14 100\nt 3\nc tcache on\nf 13\nc tcache off\n\
t 0\nf 5\nf 8\nf 9\nf 10\nc flush\nc purge all\n";

#[test]
fn controls_match_the_real_allocators_at_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("controls.txt");
    std::fs::write(&path, CONTROLS).unwrap();
    let records: Vec<Record> = fragsim::trace::open(&path)
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap();
    let controls = records
        .iter()
        .filter(|r| matches!(r, Record::Control { .. }))
        .count();
    assert_eq!(controls, 20);
    for conf in ["", "tcache:false", "narenas:2", "dirty_decay_ms:0"] {
        check_live(&records, conf);
    }
}

#[test]
fn a_recorded_program_with_mallctl_writes_matches_its_own_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::jemalloc_program(dir.path(), "mallctl_writes", &["-lpthread"]) else {
        return;
    };
    let trace = dir.path().join("w.trace");
    let out = common::fragsim()
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    let real = stderr_of(&out);
    assert!(out.status.success(), "{real}");
    assert!(real.contains("25 mallctl writes"), "{real}");
    // The text form carries them, and reads back (it starts with the mappings' `m` lines).
    let text = common::dump(&trace);
    let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(
        count("c flush"),
        8,
        "two in main (one by MIB), two per worker"
    );
    assert_eq!(count("c arena "), 3);
    assert_eq!(
        count("c purge "),
        5,
        "one per worker, one by MIB and the last of every arena"
    );
    assert_eq!(count("c decay "), 3);
    assert_eq!((count("c tcache off"), count("c tcache on")), (3, 3));
    let as_text = dir.path().join("w.txt");
    std::fs::write(&as_text, &text).unwrap();
    for t in [&trace, &as_text] {
        let replay = common::replay_process(t, &[]);
        let context = format!("from {}", t.display());
        common::assert_figures(&replay, &real, &common::FINAL_FIGURES[..2], &context);
    }
    // Without them the model is off (measured: 368,512 allocated bytes too many).
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("c "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&as_text, without).unwrap();
    let replay = common::run_ok(&[
        "replay",
        as_text.to_str().unwrap(),
        "--process",
        "--preset",
        "default",
    ]);
    assert_ne!(
        summary_row(&replay, "final allocated bytes"),
        program_stat(&real, "stats.allocated")
    );
    let records: Vec<Record> = fragsim::trace::open(&trace)
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap();
    check_live(&records, "");
}
