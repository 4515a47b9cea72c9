//! Issue 38 §1: one trace source feeding several analyses in one engine pass
//! (`fragsim::analysis`), each finishing into its result and a summary whose fields are the
//! ones the commands print. Golden values: the commands' own output on the same committed
//! trace (`fragsim trace stats` reads the counts another way; `replay` and `replay
//! --process` print the summaries), and the trace's text form for its thread exits.

mod common;

use common::summary_row;
use fragsim::analysis::{self, Analysis, TraceSource};
use fragsim::analysis::{ActiveBytes, OneArena};
use fragsim::analysis::{ProcessModel, ProcessModelRun};
use fragsim::export::Cell;
use fragsim::process::{DecayClock, ProcessOptions, ProcessRun};
use fragsim::sizeclass::Preset;

const TRACE: &str = "cpp-threads-map.trace";

#[test]
fn a_trace_shape_counts_what_trace_stats_counts() {
    let path = common::committed_trace(TRACE);
    let shape = TraceSource::File(&path).shape().unwrap();
    let stats = common::run_ok(&["trace", "stats", path.to_str().unwrap()]);
    let row = stats
        .lines()
        .find(|l| l.starts_with(&format!("| {}", path.display())))
        .unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let number = |i: usize| cells[i].replace(',', "").parse::<u64>().unwrap();
    assert_eq!(shape.calls, number(2), "{row}");
    assert_eq!(u64::from(shape.threads), number(9), "{row}");
    let exits = common::dump(&path).lines().filter(|l| *l == "x").count() as u64;
    assert_eq!(shape.events, shape.calls + exits);
    assert!(shape.timed);
}

#[test]
fn analyses_in_one_pass_find_what_the_commands_print() {
    let path = common::committed_trace(TRACE);
    let config = Preset::V5_3_0.config();
    let options = ProcessOptions::parse("narenas:4").unwrap();
    let run = ProcessRun::new(config, &options, 2, DecayClock::default(), u64::MAX, None).unwrap();
    let analyses: Vec<Box<dyn Analysis>> = vec![
        Box::new(OneArena::new(config).unwrap()),
        Box::new(ProcessModel::new(run)),
    ];
    let mut findings = analysis::run(TraceSource::File(&path), analyses).unwrap();
    let process = findings.pop().unwrap();
    let one = findings.pop().unwrap();
    let p = path.to_str().unwrap();

    let printed = common::run_ok(&["replay", p, "--preset", "5.3.0"]);
    let active = one.result::<ActiveBytes>().unwrap();
    assert_eq!(active.peak, summary_row(&printed, "peak active bytes"));

    let printed = common::run_ok(&[
        "replay",
        p,
        "--process",
        "--preset",
        "5.3.0",
        "--malloc-conf",
        "narenas:4",
    ]);
    for (field, row) in [
        ("events", "events"),
        ("threads", "threads"),
        ("peak_active_bytes", "peak active bytes"),
        (
            "tcache_bytes_at_active_peak",
            "thread cache bytes at the active peak",
        ),
    ] {
        let Some(Cell::Int(v)) = process.summary.get(field) else {
            panic!("{field}: {:?}", process.summary.get(field))
        };
        assert_eq!(*v, summary_row(&printed, row), "{field}");
    }
    let run = process.result::<ProcessModelRun>().unwrap().run;
    let mean = summary_row(&printed, "mean active bytes");
    assert_eq!(run.summary.mean_active_bytes() as u64, mean);
}

#[test]
fn builds_as_analyses_end_where_the_live_jemalloc_ends() {
    // Golden: the real jemalloc. The same trace replayed in a private arena of the linked
    // 5.3.1 and of Debian's 5.3.0, every event compared, must match exactly, and the model
    // each build's analysis ran in the one pass must end on the bytes that replay ended on.
    use fragsim::check::{replay_compare, LiveAllocator, LiveOptions};
    use fragsim::whatif::{Build, ReplayOptions};
    let path = common::committed_trace(TRACE);
    let linked = fragsim::live::Api::linked().config().unwrap();
    let mut builds = vec![(Build::new("linked", linked), LiveAllocator::Linked)];
    let debian = std::path::Path::new(common::DEBIAN_JEMALLOC);
    if debian.exists() {
        builds.push((
            Build::new("5.3.0", Preset::V5_3_0.config()),
            LiveAllocator::System(debian.into()),
        ));
    } else {
        eprintln!("Debian's libjemalloc2 is not installed: the linked build alone");
    }
    let only: Vec<Build> = builds.iter().map(|(b, _)| b.clone()).collect();
    let replays = analysis::build_replays(
        TraceSource::File(&path),
        &only,
        ReplayOptions { every: None },
        &|_| {},
    )
    .unwrap();
    assert_eq!(replays.len(), builds.len());
    for ((build, allocator), replay) in builds.into_iter().zip(&replays) {
        let options = LiveOptions {
            every: 1,
            allocator,
            child_exe: Some(env!("CARGO_BIN_EXE_fragsim").into()),
            keep: 5,
        };
        let live = replay_compare(path.as_path(), &options).unwrap();
        assert!(
            live.comparison.is_exact(),
            "{}: {:?}",
            build.name,
            live.comparison.first
        );
        assert_eq!(replay.build, build.name);
        assert_eq!(replay.events, live.final_stats.events, "{}", build.name);
        assert_eq!(
            replay.last.active, live.final_stats.active_bytes,
            "{}",
            build.name
        );
        assert!(replay.peak.active >= replay.last.active);
    }
}
