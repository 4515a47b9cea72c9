//! Issue 40 §5: explicit thread caches (`tcache.create`, `MALLOCX_TCACHE(c)`, `tcache.flush`,
//! `tcache.destroy`) and `rallocx` with `MALLOCX_` flags. A C program on Debian's jemalloc
//! 5.3.0 uses them on two threads (`tests/native_programs/explicit_caches.c`); the recorder
//! keeps each write as a control (`c cache create|flush|destroy C`) and each call's flags.
//! Golden values: the program's own statistics at its end (allocated, active and mapped equal,
//! resident within 1% or 256 KiB, the bound), and every event of live replays of the
//! recording under the linked 5.3.1 and Debian's 5.3.0 (the child makes the caches too).

mod common;

use common::{program_stat, stderr_of, summary_row};
use fragsim::check::{compare_process_live, ProcessAllocator};
use fragsim::process::ProcessOptions;
use fragsim::trace::{Control, Record};
use std::path::{Path, PathBuf};

const DEBIAN_530: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
const DECAY_OFF: &str = "dirty_decay_ms:-1,muzzy_decay_ms:-1";

/// Records the program (with `args`) under `DECAY_OFF`: the trace and the program's stderr.
fn record(dir: &Path, exe: &Path, args: &[&str]) -> (PathBuf, String) {
    let trace = dir.join(format!("ec{}.trace", args.len()));
    let out = common::fragsim()
        .env("MALLOC_CONF", DECAY_OFF)
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(exe)
        .args(args)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    (trace, err)
}

#[test]
fn explicit_caches_match_the_programs_own_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::jemalloc_program(dir.path(), "explicit_caches", &["-lpthread"]) else {
        return;
    };
    // With background threads turned on midway too (a control the model applies; decay is
    // off, so they purge nothing).
    for args in [&[][..], &["bg"][..]] {
        let (trace, real) = record(dir.path(), &exe, args);
        let text = common::dump(&trace);
        let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
        assert_eq!(
            (
                count("c cache create "),
                count("c cache flush "),
                count("c cache destroy ")
            ),
            (4, 1, 2),
            "{args:?}"
        );
        assert_eq!(count("c background on"), args.len(), "{args:?}");
        let replay = common::replay_process(&trace, &common::DEBIAN_530_BUILD);
        let context = format!("{args:?}");
        common::assert_figures(&replay, &real, &common::FINAL_FIGURES, &context);
        let (model, real) = (
            summary_row(&replay, "final resident bytes"),
            program_stat(&real, "stats.resident"),
        );
        let allowed = (real / 100).max(256 << 10);
        assert!(
            model.abs_diff(real) <= allowed,
            "resident: model {model}, real {real}"
        );
    }
}

#[test]
fn explicit_caches_match_live_at_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::jemalloc_program(dir.path(), "explicit_caches", &["-lpthread"]) else {
        return;
    };
    let (trace, _) = record(dir.path(), &exe, &[]);
    let records = fragsim::trace::read_all(&trace).unwrap();
    let creates = records
        .iter()
        .filter(|r| {
            matches!(
                r,
                Record::Control {
                    control: Control::CacheCreate { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(creates, 4);
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_fragsim"));
    let mut allocators = vec![ProcessAllocator::Linked];
    if Path::new(DEBIAN_530).is_file() {
        allocators.push(ProcessAllocator::System(DEBIAN_530.into()));
    }
    for conf in ["", "narenas:2"] {
        let options = ProcessOptions::parse(conf).unwrap();
        for a in &allocators {
            let r = compare_process_live(&exe, a, &records[..], &options, 1, 12).unwrap();
            assert!(
                r.comparison.is_exact(),
                "{a:?} {conf}: {} of {} values differ, first {:?}",
                r.comparison.mismatched_values,
                r.comparison.values,
                r.comparison.first
            );
        }
    }
}
