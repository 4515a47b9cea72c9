//! What-if replays of hand-built traces, checked against peaks computed by hand from
//! jemalloc's size classes and slab sizes.
//!
//! Class table used below (jemalloc 5.3 `sc.c`; `arenas.bin.<i>.{size,slab_size,nregs}` of
//! the x86-64 default build, which `fragsim validate` reads from the running jemalloc; the
//! quantum8 rows from the same rule, slab = least whole number of pages the class divides,
//! validated live by `scripts/validate-variants.sh` with `JEMALLOC_SYS_WITH_LG_QUANTUM=3`):
//!
//! | build    | request | class | slab bytes | regions |
//! |----------|--------:|------:|-----------:|--------:|
//! | default  | 24      | 32    | 4096       | 128     |
//! | default  | 40      | 48    | 12288      | 256     |
//! | both     | 100     | 112   | 28672      | 256     |
//! | quantum8 | 24      | 24    | 12288      | 512     |
//! | quantum8 | 40      | 40    | 20480      | 512     |
//! | both     | 20000   | 20480 (large: 16384, 20480, 24576 ...) + one 4096 B padding page |

mod whatif_support;

use fragsim::export::{Csv, Markdown, TableFormat};
use fragsim::sim::{random_trace, ArenaModel, WorkloadSpec};
use fragsim::trace::Event;
use fragsim::whatif::{
    class_table, parse_builds, replay_build, timeline_table, whatif_table, Build, BuildReplay,
    ReplayOptions, Totals,
};
use whatif_support::{hand_trace, CountingArena};

/// Replays with the test double (bin rules only).
fn run(build: &Build, events: &[Event], every: Option<u64>) -> BuildReplay {
    let arena = CountingArena::new(build.config);
    let events = events.iter().map(|&e| Ok::<_, std::io::Error>(e));
    replay_build(build, arena, events, ReplayOptions { every }, &|_| {}).unwrap()
}

/// Replays with the exact arena model.
fn run_sim(build: &Build, events: &[Event], every: Option<u64>) -> BuildReplay {
    let arena = ArenaModel::new(build.config).unwrap();
    let events = events.iter().map(|&e| Ok::<_, std::io::Error>(e));
    replay_build(build, arena, events, ReplayOptions { every }, &|_| {}).unwrap()
}

#[test]
fn hand_trace_peaks_match_hand_computation_for_two_builds() {
    check_hand_trace(run);
}

#[test]
fn hand_trace_peaks_match_hand_computation_with_the_exact_model() {
    check_hand_trace(run_sim);
}

fn check_hand_trace(run: fn(&Build, &[Event], Option<u64>) -> BuildReplay) {
    let builds = parse_builds("default,quantum8").unwrap();
    let trace = hand_trace();
    assert_eq!(trace.len(), 323);
    let default = run(&builds[0], &trace, None);
    let quantum8 = run(&builds[1], &trace, None);

    // Default: requested and allocated peak with the large block live (event 201), active
    // after the realloc opens a 112 B slab (event 313): 2 slabs of 32 B + one of 48 B + one of
    // 112 B = 8192 + 12288 + 28672.
    assert_eq!(default.events, 323);
    assert_eq!(default.peak.requested, 200 * 24 + 20000);
    assert_eq!(default.peak.allocated, 200 * 32 + 20480);
    assert_eq!(default.peak.active, 49152);
    assert_eq!(default.at_peak.event, 313);
    assert_eq!(default.at_peak.requested, 99 * 24 + 10 * 40 + 100);
    assert_eq!(default.at_peak.rounding, 99 * 8 + 10 * 8 + 12);
    assert_eq!(
        default.at_peak.empty_regions,
        49152 - (99 * 32 + 10 * 48 + 112)
    );
    assert_eq!(default.at_peak.large_pad, 0);
    assert_eq!(default.last.active, 49152 - 12288);

    // quantum8: one 24 B slab holds all 200; the 40 B slab is 5 pages.
    assert_eq!(quantum8.peak.requested, 24800);
    assert_eq!(quantum8.peak.allocated, 200 * 24 + 20480);
    assert_eq!(quantum8.peak.active, 12288 + 20480 + 28672);
    assert_eq!(quantum8.at_peak.event, 313);
    assert_eq!(quantum8.at_peak.rounding, 12);
    assert_eq!(
        quantum8.at_peak.empty_regions,
        61440 - (99 * 24 + 400 + 112)
    );
    assert_eq!(quantum8.last.active, 61440 - 20480);

    let table = whatif_table("hand", &[default, quantum8]);
    let csv = Csv.render(&table).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].starts_with(
        "build,events,peak_requested_bytes,peak_allocated_bytes,peak_active_bytes,\
         final_active_bytes,internal_fragmentation,external_fragmentation,active_vs_first_bytes"
    ));
    // 3760 / 2876 - 1 = 0.3074 and 49152 / 3760 - 1 = 12.0723 (allocated / requested and
    // active / allocated at the peak); shares of it: 884 / 49152 = 0.0180 rounding,
    // 45392 / 49152 = 0.9235 empty regions.
    assert!(rows[1]
        .starts_with("5.3.0,323,24800,26880,49152,36864,0.3074,12.0723,0,1.0000,0.0180,0.9235,"));
    // 2888 / 2876 - 1 = 0.0042, 61440 / 2888 - 1 = 20.2742; +12288 bytes, 1.25x; shares
    // 12 / 61440 = 0.0002 and 58552 / 61440 = 0.9530.
    assert!(rows[2].starts_with(
        "quantum8,323,24800,25280,61440,40960,0.0042,20.2742,12288,1.2500,0.0002,0.9530,"
    ));
}

#[test]
fn hand_trace_class_rows_are_the_hand_values_sorted_by_loss() {
    let build = Build::preset("default").unwrap();
    let replay = run(&build, &hand_trace(), None);
    let sizes: Vec<u64> = replay.classes_by_loss().iter().map(|c| c.size).collect();
    assert_eq!(sizes, [112, 48, 32, 20480]);
    let by_size = |s: u64| replay.classes.iter().find(|c| c.size == s).unwrap();
    let c32 = by_size(32);
    assert_eq!(
        (
            c32.allocations,
            c32.peak_live,
            c32.peak_slabs,
            c32.live_at_peak
        ),
        (200, 200, 2, 99)
    );
    assert_eq!(
        (c32.rounding_at_peak, c32.empty_regions_at_peak),
        (792, 8192 - 3168)
    );
    let c112 = by_size(112);
    assert_eq!(
        (c112.allocations, c112.peak_slabs, c112.lost()),
        (1, 1, 28572)
    );
    let large = by_size(20480);
    assert_eq!(
        (large.allocations, large.peak_live, large.live_at_peak),
        (1, 1, 0)
    );
}

#[test]
fn class_rows_sum_to_the_totals_at_the_peak() {
    // The exact model on its own random traces (aligned requests, reallocs, large blocks up
    // to 24 MiB): the ledger's class rows, derived from the events alone, must add up to the
    // model's totals; and the test double on ours.
    let spec = WorkloadSpec {
        seed: 5,
        events: 30_000,
        ..WorkloadSpec::default()
    };
    let sim_trace = random_trace(&spec);
    let double_trace = whatif_support::random_trace(20_000, 7);
    for name in ["default", "quantum8", "page64k", "5.3.1"] {
        let build = Build::preset(name).unwrap();
        check_class_sums(name, &run_sim(&build, &sim_trace, None));
        check_class_sums(name, &run(&build, &double_trace, None));
    }
}

fn check_class_sums(name: &str, replay: &BuildReplay) {
    let sum =
        |f: fn(&fragsim::whatif::ClassRow) -> u64| -> u64 { replay.classes.iter().map(f).sum() };
    let p = replay.at_peak;
    assert_eq!(sum(|c| c.requested_at_peak), p.requested, "{name}");
    assert_eq!(sum(|c| c.active_at_peak), p.active, "{name}");
    assert_eq!(sum(|c| c.rounding_at_peak), p.rounding, "{name}");
    assert_eq!(sum(|c| c.empty_regions_at_peak), p.empty_regions, "{name}");
    assert_eq!(sum(|c| c.large_pad_at_peak), p.large_pad, "{name}");
    assert!(p.large_pad > 0, "{name}: large blocks are live at the peak");
    assert_eq!(
        p.requested + p.rounding + p.empty_regions + p.large_pad,
        p.active
    );
}

#[test]
fn peaks_are_over_every_event_not_only_timeline_rows() {
    let build = Build::preset("default").unwrap();
    let sparse = run(&build, &hand_trace(), Some(100));
    let events: Vec<u64> = sparse.timeline.iter().map(|p| p.event).collect();
    assert_eq!(events, [100, 200, 300, 323]);
    // The active peak (event 313) and the requested peak (201) fall between rows.
    let row_max = sparse
        .timeline
        .iter()
        .map(|p| p.totals.active)
        .max()
        .unwrap();
    assert!(row_max < sparse.peak.active);
    assert_eq!(sparse.peak.requested, 24800);
    let table = timeline_table("t", &[sparse]);
    assert_eq!(table.rows.len(), 4);
    assert_eq!(table.columns[0], "build");
}

#[test]
fn replays_are_deterministic() {
    let builds = parse_builds("default,page16k,5.3.1").unwrap();
    let trace = whatif_support::random_trace(5_000, 3);
    let render = || {
        let replays: Vec<BuildReplay> = builds.iter().map(|b| run(b, &trace, Some(97))).collect();
        let mut text = Markdown.render(&whatif_table("w", &replays)).unwrap();
        text += &Csv.render(&class_table("c", &replays[0], None)).unwrap();
        text += &Csv.render(&timeline_table("t", &replays)).unwrap();
        text
    };
    assert_eq!(render(), render());
}

#[test]
fn an_empty_trace_has_zero_peaks() {
    let build = Build::preset("default").unwrap();
    let replay = run(&build, &[], Some(10));
    assert_eq!(replay.events, 0);
    assert_eq!(replay.peak, Totals::default());
    assert!(replay.classes.is_empty());
    assert_eq!(replay.internal_fragmentation(), 0.0);
}

#[test]
fn a_free_of_a_dead_object_is_an_error_naming_the_event() {
    let build = Build::preset("default").unwrap();
    let events = [
        Event::Alloc {
            id: 0,
            size: 8,
            align: 0,
        },
        Event::Free { id: 1 },
    ];
    let arena = CountingArena::new(build.config);
    let err = replay_build(
        &build,
        arena,
        events.iter().map(|&e| Ok::<_, std::io::Error>(e)),
        ReplayOptions { every: None },
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("event 2"), "{err}");
    assert!(err.contains("object 1"), "{err}");
}
