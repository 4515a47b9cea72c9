//! `fragsim replay --measure`: real allocators measured in child processes. Allocators whose
//! Debian package is missing are skipped (`.ci/run` installs them); glibc and the linked
//! jemalloc 5.3.1 are always there.

use fragsim::measure::{measure, Allocator, MeasureOptions, Measurement};
use fragsim::trace::Event;
use std::path::{Path, PathBuf};
use std::process::Command;

const PAGE: i64 = 4096;

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fragsim"))
}

fn run(events: &[Event], allocators: &[Allocator], every: u64) -> Measurement {
    run_with(events, allocators, every, &[])
}

fn run_with(
    events: &[Event],
    allocators: &[Allocator],
    every: u64,
    env: &[(&str, &str)],
) -> Measurement {
    let options = MeasureOptions {
        allocators: allocators.to_vec(),
        every,
        exe: exe(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    let m = measure(events, &options).expect("measurement");
    assert!(
        m.runs.iter().any(|r| r.allocator == Allocator::Glibc)
            || !allocators.contains(&Allocator::Glibc)
    );
    m
}

/// Two runs on the same trace give peaks within the spread measured on this machine: five
/// runs of every committed trace under each allocator (`fragsim replay T --measure all
/// --format csv`, 5 times each) gave identical peaks under glibc and tcmalloc (no time-based
/// purging), and differed by at most 167,936 bytes (3.0%) under the two jemallocs (decay is
/// time-based) and 184,320 bytes (4.7%) under mimalloc (its delayed purge). Allowed here:
/// nothing for glibc, the larger of 64 pages and 8% for the others. tcmalloc repeated
/// exactly in those runs and in 12 more on a quiet machine (git-log: 5,914,624 bytes each
/// time), but a full `cargo test --release` on 2 busy cores once gave git-log 8,011,776: 2 MiB
/// more, exactly (cause not found; a 2 MiB step is what a huge page or a larger system
/// allocation adds). So tcmalloc may differ by 0 or by exactly 2 MiB, nothing else.
/// The same holds on a trace with threads under the baton (cpp-threads-map, 5 threads, 4 runs
/// each on a shared machine: glibc, tcmalloc and mimalloc repeated exactly, the jemallocs
/// moved by at most 12,288 bytes).
#[test]
fn two_runs_give_peaks_within_the_measured_spread() {
    two_runs_within_spread("git-log.trace", 3_000_000);
    two_runs_within_spread("cpp-threads-map.trace", 900_000);
}

fn two_runs_within_spread(name: &str, least_peak: i64) {
    let records = records(name);
    let options = MeasureOptions {
        allocators: Allocator::ALL.to_vec(),
        every: 50,
        exe: exe(),
        env: Vec::new(),
    };
    let first = fragsim::measure::measure_records(&records, &options).unwrap();
    let second = fragsim::measure::measure_records(&records, &options).unwrap();
    assert_eq!(first.runs.len(), second.runs.len());
    for (a, b) in first.runs.iter().zip(&second.runs) {
        let (pa, pb) = (a.peak().resident, b.peak().resident);
        let diff = (pa - pb).abs();
        let (within, allowed) = match a.allocator {
            Allocator::Glibc => (diff == 0, "0".to_string()),
            Allocator::Tcmalloc => (diff == 0 || diff == 2 << 20, "0 or 2 MiB".to_string()),
            _ => {
                let most = (64 * PAGE).max(pa.max(pb) * 8 / 100);
                (diff <= most, format!("at most {most}"))
            }
        };
        assert!(
            within,
            "{name} {}: peaks {pa} and {pb} differ by {diff} (allowed: {allowed})",
            a.allocator
        );
        // A real measurement: git log's heap peaks above 3.7 MB of requests, the threaded
        // map's above 1.0 MB.
        assert!(pa > least_peak, "{name} {}: peak {pa}", a.allocator);
    }
}

/// The replayer's own tables are in the baseline: an empty trace leaves every allocator
/// within one page of zero, and a trace whose one object has id 2,000,000 (tables of 32 MB
/// for the pointer and size per id) peaks far below the tables' size.
#[test]
fn the_replayers_tables_are_excluded() {
    let empty = run(&[], &Allocator::ALL, 1);
    assert!(empty.runs.len() >= 2);
    for r in &empty.runs {
        assert_eq!(r.samples.len(), 2, "{}", r.allocator);
        let delta = r.samples[1].resident;
        assert!(
            delta.abs() <= PAGE,
            "{}: empty trace moved resident by {delta}",
            r.allocator
        );
    }
    let id = 2_000_000;
    let events = [
        Event::Alloc {
            id,
            size: 100,
            align: 0,
        },
        Event::Free { id },
    ];
    let one = run(&events, &Allocator::ALL, 1);
    for r in &one.runs {
        assert!(
            r.library.tables_bytes >= 32_000_000,
            "{}: tables {}",
            r.allocator,
            r.library.tables_bytes
        );
        let peak = r.peak().resident;
        assert!(
            peak < 1 << 20,
            "{}: peak {peak} over the baseline",
            r.allocator
        );
    }
}

/// glibc's chunk for a request, derived from malloc/malloc.c (2.36): the request plus the
/// 8-byte size header, rounded up to 16 bytes, at least 32 bytes (request2size, MINSIZE);
/// the replayer asks 1 byte for a 0-byte request.
fn glibc_chunk(request: u64) -> i64 {
    ((request.max(1) + 8 + 15) & !15).max(32) as i64
}

/// mallinfo2's in-use bytes (uordblks + hblkhd, over the baseline) equal the live requested
/// bytes plus glibc's per-chunk overhead at every event of an allocation-only trace (no
/// frees: freed chunks in glibc's tcache count as in use, and reused chunks may be larger).
/// Sizes stay below the 128 KiB mmap threshold. The tcache is off in the child: the dynamic
/// loader's own frees before the baseline (dlsym, dladdr) leave chunks there that mallinfo2
/// already counts as in use, and the trace's first requests would reuse them (measured: 48
/// bytes short at event 3 with the tcache on).
#[test]
fn glibc_in_use_is_requested_plus_chunk_overhead() {
    let mut sizes: Vec<u64> = (0..=4000).step_by(13).collect();
    sizes.extend((10_000..60_000).step_by(7919));
    let events: Vec<Event> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| Event::Alloc {
            id: i as u32,
            size,
            align: 0,
        })
        .collect();
    let tunables = [("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0")];
    let m = run_with(&events, &[Allocator::Glibc], 1, &tunables);
    let r = &m.runs[0];
    assert_eq!(r.samples.len(), events.len() + 1);
    let mut expected = 0i64;
    let mut requested = 0u64;
    for (i, s) in r.samples.iter().enumerate().skip(1) {
        expected += glibc_chunk(sizes[i - 1]);
        requested += sizes[i - 1];
        assert_eq!(s.requested, requested, "event {}", s.event);
        assert_eq!(
            s.in_use,
            Some(expected),
            "event {}: size {}",
            s.event,
            sizes[i - 1]
        );
    }
    // The overhead is what the derivation says, not zero: 8 bytes a chunk and the rounding.
    assert!(expected as u64 > requested + 8 * sizes.len() as u64);
}

#[test]
fn bad_allocator_names_and_every_zero_are_one_line_errors() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces/sort.trace");
    for args in [
        vec!["--measure", "glibc,hoard"],
        vec!["--measure", "glibc", "--every", "0"],
        vec!["--measure", "glibc", "--live"],
    ] {
        let out = Command::new(exe())
            .arg("replay")
            .arg(&trace)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The CSV has one row per allocator with the columns; the notes go to stderr and
/// say what a replay is not.
#[test]
fn csv_rows_and_caveats() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces/sort.trace");
    let out = Command::new(exe())
        .arg("replay")
        .arg(&trace)
        .args(["--measure", "glibc,jemalloc-5.3.1", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    for column in [
        "allocator",
        "peak_resident_bytes",
        "mean_resident_bytes",
        "peak_requested_bytes",
        "ns_per_event",
        "peak_resident_over_peak_requested",
    ] {
        assert!(header.split(',').any(|c| c == column), "{header}");
    }
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(rows[0].starts_with("glibc,") && rows[1].starts_with("jemalloc-5.3.1,"));
    // Issue 38 §3: numeric columns hold numbers or nothing (before: "not available" and "-"),
    // and the ratio is of the two peaks (before: resident over what was requested at the
    // resident peak, 2,258.7 on a trace whose resident peak fell where little was requested).
    let names: Vec<&str> = header.split(',').collect();
    let col = |row: &str, name: &str| -> String {
        let i = names.iter().position(|c| *c == name).unwrap();
        row.split(',').nth(i).unwrap().to_string()
    };
    for row in &rows {
        for name in &names[2..] {
            let v = col(row, name);
            assert!(
                v.is_empty() || v.parse::<f64>().is_ok(),
                "{name}: {v:?} in {row}"
            );
        }
        let ratio: f64 = col(row, "peak_resident_over_peak_requested")
            .parse()
            .unwrap();
        let resident: f64 = col(row, "peak_resident_bytes").parse().unwrap();
        let requested: f64 = col(row, "peak_requested_bytes").parse().unwrap();
        assert!((ratio - resident / requested).abs() < 0.0006, "{row}");
    }
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no program memory outside the heap"), "{err}");
    assert!(err.contains("Replay speed is not program speed"), "{err}");
}

/// The report section measures every trace of the folder and writes its table, chart and
/// Markdown under timing/ (measured, so never among the committed files).
#[test]
fn report_section_writes_a_table_and_chart_per_trace() {
    let traces = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/traces");
    std::fs::copy(data.join("sort.trace"), traces.path().join("sort.trace")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut options = fragsim::report::ReportOptions::new(out.path().to_path_buf());
    options.fragsim_exe = Some(exe());
    options.programs.as_mut().unwrap().traces = traces.path().to_path_buf();
    let section = fragsim::report::write_allocators_section(out.path(), &options).unwrap();
    let files: Vec<&str> = section.files.iter().map(|w| w.file.as_str()).collect();
    assert_eq!(
        files,
        [
            "timing/allocators.md",
            "timing/allocators-sort.csv",
            "timing/charts/allocators-sort.png",
            "timing/charts/allocators-sort.svg"
        ]
    );
    let md = std::fs::read_to_string(out.path().join("timing/allocators.md")).unwrap();
    assert!(
        md.contains("| glibc |") && md.contains("| jemalloc-5.3.1 |"),
        "{md}"
    );
    assert!(md.contains("no program memory outside the heap"), "{md}");
    let png = std::fs::read(out.path().join("timing/charts/allocators-sort.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"));
}

/// A missing allocator is one line naming its Debian package; the model's peak is beside the
/// measured rows (built by hand: no child needed).
#[test]
fn a_missing_allocator_is_a_note_naming_its_package() {
    use fragsim::measure::{notes, summary_table, Missing};
    let m = Measurement {
        events: 0,
        every: 1,
        runs: Vec::new(),
        missing: vec![Missing {
            allocator: Allocator::Tcmalloc,
            library: "libtcmalloc_minimal.so.4",
            package: "libtcmalloc-minimal4",
        }],
        peak_requested: 0,
        model_label: "5.3.1".into(),
        model_kind: "one arena, no thread cache".into(),
        model: Vec::new(),
        model_peak_active: 0,
    };
    let lines = notes(&m);
    assert_eq!(
        lines[0],
        "tcmalloc: not measured, libtcmalloc_minimal.so.4 is not installed (Debian package libtcmalloc-minimal4)"
    );
    assert!(summary_table(&m, "t").rows.is_empty());
    assert_eq!(
        Allocator::Tcmalloc.debian_package(),
        Some("libtcmalloc-minimal4")
    );
    assert_eq!(Allocator::Mimalloc.debian_package(), Some("libmimalloc2.0"));
    assert_eq!(Allocator::Jemalloc.debian_package(), Some("libjemalloc2"));
}

fn records(name: &str) -> Vec<fragsim::trace::Record> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/traces")
        .join(name);
    fragsim::trace::open(&path)
        .unwrap()
        .records()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

/// Under the baton (one replay thread per trace thread, in the recorded order), jemalloc's
/// own `stats.active` over the baseline equals the process model's active bytes at every
/// sample, for Debian's 5.3.0 and the linked 5.3.1 (`experimental_tcache_gc:false`) with
/// decay off and 3 arenas (fewer than the traces' 5 threads: threads share arenas), the
/// `MALLOC_CONF` the process model's live child is given. The golden values are jemalloc's
/// (the model only matches them); a replay on one thread misses them (checked below).
#[test]
fn jemalloc_active_under_the_baton_is_the_process_models() {
    use fragsim::process::{Process, ProcessOptions};
    use fragsim::sizeclass::JemallocVersion;
    use fragsim::trace::Record;
    let options = ProcessOptions::parse("narenas:3,dirty_decay_ms:-1,muzzy_decay_ms:-1").unwrap();
    for name in ["cpp-threads-map.trace", "python-threads.trace"] {
        let records = records(name);
        for (allocator, version, var) in [
            (
                Allocator::Jemalloc531,
                JemallocVersion::V5_3_1,
                "_RJEM_MALLOC_CONF",
            ),
            (Allocator::Jemalloc, JemallocVersion::V5_3_0, "MALLOC_CONF"),
        ] {
            if allocator.library_name().is_some() && allocator.find_library().is_none() {
                eprintln!("{allocator}: not installed, skipped");
                continue;
            }
            let conf = options.to_conf(version);
            let m = fragsim::measure::measure_records(
                &records,
                &MeasureOptions {
                    allocators: vec![allocator],
                    every: 97,
                    exe: exe(),
                    env: vec![(var.to_string(), conf.clone())],
                },
            )
            .unwrap();
            let run = &m.runs[0];
            assert_eq!(run.threads, 5, "{name}: replay threads");
            // The chart's model line for a threaded trace is the process model's.
            assert!(m.model_kind.contains("process model"), "{}", m.model_kind);
            let build = run.jemalloc.expect("a jemalloc child reports its build");
            assert_eq!(build.config.version, version);
            let mut model_options = options.clone();
            if version == JemallocVersion::V5_3_1 {
                model_options.experimental_tcache_gc = Some(false);
            }
            let mut model = Process::new(build.config, model_options, 1).unwrap();
            model.replayer_start(build.arena0_large).unwrap();
            let base = model.stats().active_bytes as i64;
            // Samples are at call counts; the last one comes after the trailing exits.
            let last = records
                .iter()
                .filter(|r| matches!(r, Record::Call(_)))
                .count() as u64;
            let mut samples = run.samples.iter().skip(1);
            let mut expect = |calls: u64, active: u64| {
                let s = samples.next().expect("a sample");
                assert_eq!(s.event, calls, "{name} {allocator}");
                assert_eq!(
                    s.active,
                    Some(active as i64 - base),
                    "{name} {allocator} ({conf}): active at call {calls}"
                );
            };
            let (mut calls, mut compared) = (0u64, 0);
            for r in &records {
                model.apply(r).unwrap();
                if matches!(r, Record::Call(_)) {
                    calls += 1;
                    if calls % 97 == 0 && calls < last {
                        expect(calls, model.stats().active_bytes);
                        compared += 1;
                    }
                }
            }
            expect(calls, model.stats().active_bytes);
            compared += 1;
            assert_eq!(compared, run.samples.len() - 1, "{name} {allocator}");
            eprintln!("{name} {allocator}: {compared} samples of stats.active equal the model's");
            // The same calls on one replay thread: jemalloc's figures are another process's.
            if name == "cpp-threads-map.trace" {
                let events: Vec<Event> = records
                    .iter()
                    .filter_map(|r| match r {
                        Record::Call(c) => Some(c.event),
                        _ => None,
                    })
                    .collect();
                let one = run_with(&events, &[allocator], 97, &[(var, &conf)]);
                assert_eq!(one.runs[0].threads, 1);
                let differ = one.runs[0]
                    .samples
                    .iter()
                    .zip(&run.samples)
                    .filter(|(a, b)| a.active != b.active)
                    .count();
                assert!(differ > 0, "{allocator}: one thread gave the same figures");
            }
        }
    }
}
