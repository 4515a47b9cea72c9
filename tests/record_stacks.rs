//! `fragsim record --stacks`: the recorder's own unwinder (unwind rules from `.eh_frame`,
//! cached by return address) against libunwind's `unw_backtrace`. With
//! `FRAGSIM_STACKS_CHECK=1` the recorder takes every stack both ways and aborts on the first
//! that differs; these programs, built several ways, must run to the end.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn programs() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/native_programs"
    ))
}

/// Records `source` built with `cflags` under the check; the stacks the rules took and those
/// libunwind alone took.
fn checked_record(dir: &Path, source: &str, cflags: &[&str], args: &[&str]) -> (u64, u64) {
    let exe = dir.join(format!("{}{}", source.replace('.', "_"), cflags.join("")));
    let compiler = if source.ends_with(".cpp") {
        "g++"
    } else {
        "cc"
    };
    let built = Command::new(compiler)
        .args(cflags)
        .arg("-pthread")
        .arg("-o")
        .arg(&exe)
        .arg(programs().join(source))
        .status()
        .unwrap();
    assert!(built.success(), "compiling {source}");
    let trace = dir.join("t.trace");
    let out = common::fragsim()
        .env("FRAGSIM_STACKS_CHECK", "1")
        .args(["record", "--stacks", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&exe)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("stacks differ"),
        "{source} {cflags:?}: {stderr}"
    );
    // The check passes trivially if every stack went to libunwind: the rules must have
    // taken some (the programs' own frames all have plain unwind rules).
    // "fragsim-preload: stacks checked: N by the rules, M by libunwind alone"
    let counts: Vec<u64> = stderr
        .lines()
        .find_map(|l| l.strip_prefix("fragsim-preload: stacks checked: "))
        .map(|rest| rest.split(' ').filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_default();
    let [by_rules, by_libunwind] = counts[..] else {
        panic!("{source} {cflags:?}: no check summary in {stderr}");
    };
    assert!(by_rules > 0, "{source} {cflags:?}: {stderr}");
    (by_rules, by_libunwind)
}

#[test]
fn the_rules_give_libunwinds_stacks() {
    if !Path::new("/usr/lib/x86_64-linux-gnu/libunwind.so.8").exists() {
        eprintln!("SKIPPED: libunwind8 is not installed (apt-get install libunwind8)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for cflags in [
        &["-O2"][..],
        &["-O0"],
        &["-O2", "-fno-omit-frame-pointer"],
        &["-O1", "-fomit-frame-pointer"],
    ] {
        // The three allocations in a signal handler: a signal frame, libunwind's to take.
        let (_, by_libunwind) = checked_record(dir.path(), "unwind_shapes.c", cflags, &[]);
        assert!(by_libunwind >= 3, "{cflags:?}: {by_libunwind}");
    }
    checked_record(dir.path(), "stacks.c", &["-O0", "-g"], &[]);
    checked_record(dir.path(), "threads_map.cpp", &["-O2"], &["5000"]);
    checked_record(dir.path(), "sequence.cpp", &["-O0", "-g"], &[]);
}

const JEMALLOC_HEADER: &str = "/usr/include/jemalloc/jemalloc.h";

/// What jemalloc_stats.c printed: its `stat NAME VALUE` lines and its JSON statistics without
/// the mutex counters and the uptime (they count lock operations and time, not the heap).
struct HeapStats {
    stats: Vec<(String, u64)>,
    json: serde_json::Value,
}

impl HeapStats {
    fn stat(&self, name: &str) -> u64 {
        self.stats.iter().find(|(n, _)| n == name).unwrap().1
    }
}

fn parse_stats(stdout: &str) -> HeapStats {
    let (lines, json) = stdout.split_once("json\n").expect("a json line");
    let stats = lines
        .lines()
        .filter_map(|l| l.strip_prefix("stat "))
        .map(|l| {
            let (name, value) = l.split_once(' ').unwrap();
            (name.to_string(), value.parse().unwrap())
        })
        .collect();
    let mut json: serde_json::Value = serde_json::from_str(json).expect("malloc_stats_print JSON");
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for key in ["mutexes", "mutex", "uptime_ns"] {
                    m.remove(key);
                }
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut json);
    HeapStats { stats, json }
}

/// Every leaf of `v` as `path = value`, for a readable difference.
fn leaves(v: &serde_json::Value, path: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| leaves(x, format!("{path}.{k}"), out)),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| leaves(x, format!("{path}[{i}]"), out)),
        _ => out.push(format!("{path} = {v}")),
    }
}

/// jemalloc_stats.c recorded (with `--stacks` if `stacks`) under `conf`, with the address
/// space's randomisation off (the radix tree's leaves, in `metadata`, depend on where the
/// kernel maps memory): its statistics and its trace.
fn record_stats(dir: &Path, exe: &Path, conf: &str, stacks: bool) -> (HeapStats, PathBuf) {
    use std::os::unix::process::CommandExt;
    let trace = dir.join(format!("{}{}.trace", conf.replace([':', ','], "_"), stacks));
    let mut cmd = common::fragsim();
    cmd.env("MALLOC_CONF", conf)
        .args(["record", "-o"])
        .arg(&trace);
    if stacks {
        cmd.arg("--stacks");
    }
    // SAFETY: personality is async-signal-safe; it is inherited across exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
            Ok(())
        });
    }
    let out = cmd.arg("--").arg(exe).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{conf} stacks {stacks}: {stderr}");
    (parse_stats(&String::from_utf8_lossy(&out.stdout)), trace)
}

/// The process model (Debian's 5.3.0 build, `conf`) after the trace's free of the program's
/// marker block (malloc(54321), freed right before it read its statistics): allocated and
/// active bytes.
fn model_at_marker(trace: &Path, conf: &str) -> (u64, u64) {
    use fragsim::process::{machine_cpus, Process, ProcessOptions};
    use fragsim::trace::{Call, Event, Record};
    let options = ProcessOptions::parse(conf).unwrap();
    let config = fragsim::sizeclass::Preset::V5_3_0.config();
    let mut model = Process::new(config, options, machine_cpus()).unwrap();
    let mut marker = None;
    for record in fragsim::trace::open(trace).unwrap().records() {
        let record = record.unwrap();
        model.apply(&record).unwrap();
        if let Record::Call(Call { event, .. }) = record {
            match event {
                Event::Alloc {
                    id, size: 54321, ..
                } => marker = Some(id),
                Event::Free { id } if Some(id) == marker => {
                    let s = model.snapshot();
                    return (s.allocated_bytes, s.active_bytes);
                }
                _ => {}
            }
        }
    }
    panic!("{}: no marker block freed", trace.display());
}

/// Issue 40 §6: the recorder's own work for `--stacks` (libunwind's loading, unwinding) never
/// reaches the program's allocator. A program on Debian's jemalloc 5.3.0 shows every
/// statistic of its heap (malloc_stats_print's JSON: totals, every arena's pages and extents,
/// every bin's regions and slabs; mutex counters and uptime aside), the same with and without
/// `--stacks`, thread cache on and off (decay off: with it, purges follow the clock); and the
/// trace through the process model gives the allocated and active bytes the program read from
/// its allocator (both traces: neither lacks a block). Before the recorder had its own heap,
/// `--stacks` added 6,064 allocated bytes (cache on; 6,128 and 110,592 active bytes with it
/// off) that no trace had.
#[test]
fn stacks_leave_the_programs_heap_alone() {
    if !Path::new("/usr/lib/x86_64-linux-gnu/libunwind.so.8").exists()
        || !Path::new(JEMALLOC_HEADER).exists()
    {
        eprintln!("SKIPPED: needs libunwind8 and libjemalloc-dev ({JEMALLOC_HEADER})");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("jemalloc_stats");
    let built = Command::new("cc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&exe)
        .arg(programs().join("jemalloc_stats.c"))
        .arg("-ljemalloc")
        .status()
        .unwrap();
    assert!(built.success(), "compiling jemalloc_stats.c");
    for conf in [
        "tcache:false,dirty_decay_ms:-1,muzzy_decay_ms:-1",
        "dirty_decay_ms:-1,muzzy_decay_ms:-1",
    ] {
        let (plain, plain_trace) = record_stats(dir.path(), &exe, conf, false);
        let (stacked, stacked_trace) = record_stats(dir.path(), &exe, conf, true);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        leaves(&plain.json, String::new(), &mut a);
        leaves(&stacked.json, String::new(), &mut b);
        let differ: Vec<String> = a
            .iter()
            .zip(&b)
            .filter(|(x, y)| x != y)
            .take(8)
            .map(|(x, y)| format!("{x} without, {y} with"))
            .collect();
        assert!(
            differ.is_empty() && a.len() == b.len(),
            "{conf}: --stacks changed the heap: {differ:#?}"
        );
        assert_eq!(plain.stats, stacked.stats, "{conf}");
        for (trace, stats) in [(plain_trace, &plain), (stacked_trace, &stacked)] {
            let real = (stats.stat("stats.allocated"), stats.stat("stats.active"));
            assert_eq!(
                model_at_marker(&trace, conf),
                real,
                "{conf}: {}",
                trace.display()
            );
        }
    }
}
