//! Issue 40 §5: calls through jemalloc's own API (`mallocx`, `dallocx`, `sdallocx` with
//! `MALLOCX_ARENA` and `MALLOCX_TCACHE_NONE`), which servers make to route objects to a
//! dedicated arena. The recorder keeps each call's flags (`j FLAGS` in the text form), and
//! the process model serves them as jemalloc does: a manual arena made at first use, the
//! cache bypassed, a cache miss filled from the named arena. The golden values are the real
//! allocators' own statistics: a hand-made trace replayed live under the linked 5.3.1 and
//! Debian's 5.3.0 (every event compared), and a recorded C program's `stats` at its end.

mod common;

use common::stderr_of;
use fragsim::check::{compare_process_live, ProcessAllocator};
use fragsim::process::ProcessOptions;
use fragsim::trace::Record;
use std::fmt::Write;
use std::path::{Path, PathBuf};

const DEBIAN_530: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
const TCACHE_NONE: u32 = 1 << 8;

/// `MALLOCX_ARENA(a)`.
fn arena(a: u32) -> u32 {
    (a + 1) << 20
}

/// Two threads, each routing long-lived objects to manual arenas (recorded as arenas 100 and
/// 200) without the cache and through it, bypassing the cache in its own arena, between
/// short-lived plain allocations; half the long-lived ones freed without the cache.
fn routed_trace() -> String {
    let mut t = String::new();
    let mut id = 0u32;
    let mut kept = Vec::new();
    for i in 0..1200u32 {
        let thread = i / 600;
        let _ = writeln!(t, "t {thread}");
        let flags = match i % 4 {
            0 => arena(100) | TCACHE_NONE,
            1 => arena(100),
            2 => TCACHE_NONE,
            _ => arena(200) | TCACHE_NONE,
        };
        let size = [64, 96, 200, 20_000][(i % 4) as usize] + u64::from(i % 5) * 16;
        let _ = writeln!(t, "a {id} 48");
        let temp = id;
        id += 1;
        let _ = writeln!(t, "j {flags:#x}\na {id} {size}");
        kept.push((id, flags));
        id += 1;
        if i % 3 != 0 {
            let _ = writeln!(t, "f {temp}");
        }
        if i % 2 == 1 {
            let (k, f) = kept.remove(0);
            match f & TCACHE_NONE {
                0 => writeln!(t, "f {k}"),
                _ => writeln!(t, "j {TCACHE_NONE:#x}\nf {k}"),
            }
            .unwrap();
        }
    }
    t
}

#[test]
fn routed_calls_match_the_real_allocators_at_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("routed.txt");
    std::fs::write(&path, routed_trace()).unwrap();
    let records: Vec<Record> = fragsim::trace::open(&path)
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap();
    let flagged = records
        .iter()
        .filter(|r| matches!(r, Record::Call(c) if c.mallocx_flags != 0))
        .count();
    assert!(flagged > 1000, "{flagged} calls with flags");
    check_live(&records, 2000);
}

/// `records` under the linked 5.3.1 and Debian's 5.3.0, compared after every event.
fn check_live(records: &[Record], events: usize) {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_fragsim"));
    let mut allocators = vec![ProcessAllocator::Linked];
    if Path::new(DEBIAN_530).is_file() {
        allocators.push(ProcessAllocator::System(DEBIAN_530.into()));
    }
    let options = ProcessOptions::parse("").unwrap();
    for a in allocators {
        let r = compare_process_live(&exe, &a, records, &options, 1, 5).unwrap();
        assert!(r.comparison.snapshots as usize >= events);
        assert!(
            r.comparison.is_exact(),
            "{a:?}: {} of {} values differ, first {:?}",
            r.comparison.mismatched_values,
            r.comparison.values,
            r.comparison.first
        );
    }
}

#[test]
fn a_recorded_program_routing_to_a_manual_arena_matches_its_own_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::jemalloc_program(dir.path(), "api_calls", &[]) else {
        return;
    };
    let trace = dir.path().join("api.trace");
    let out = common::fragsim()
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    let real = stderr_of(&out);
    assert!(out.status.success(), "{real}");
    let text = common::dump(&trace);
    let flags: Vec<&str> = text.lines().filter(|l| l.starts_with("j ")).collect();
    assert!(flags.len() >= 2250, "{} calls with flags", flags.len());
    let replay = common::replay_process(&trace, &[]);
    common::assert_figures(&replay, &real, &common::FINAL_FIGURES[..2], "");
    // And the recorded calls against the real allocators, every event.
    let records: Vec<Record> = fragsim::trace::open(&trace)
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap();
    check_live(&records, 8000);
}
