//! Charts that hide nothing (issue #37 §4): over every chart the report draws, no plotted
//! point lies under a legend, and every series a legend (or a panel's caption) names has a
//! visible mark. The charts are the ones `fragsim report` writes, gathered through the
//! function that writes them ([`write_chart`](fragsim::charts::write_chart)), so a new chart
//! is checked without being listed here.

// The report measures jemalloc in this process too (the bump-arena memory side), as the
// fragsim binary does.
fragsim::use_jemalloc!();

use fragsim::charts::{collect_layouts, Layout};
use fragsim::report::{write_report, ReportOptions};
use std::path::{Path, PathBuf};

/// The PNG files under `dir`, every folder deep, by name.
fn pngs(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            names.extend(pngs(&path));
        } else if path.extension().is_some_and(|e| e == "png") {
            names.push(path.file_stem().unwrap().to_string_lossy().to_string());
        }
    }
    names.sort();
    names
}

/// The report as `fragsim report` writes it (timed children included, so the uncommitted
/// timing charts are drawn too), with a small bump-arena workload as in tests/report.rs.
fn report_layouts(dir: &Path) -> Vec<Layout> {
    let mut options = ReportOptions::new(dir.to_path_buf());
    options.bump_arena.vectors = 20_000;
    options.bump_arena_runs = 1;
    options.run_children(PathBuf::from(env!("CARGO_BIN_EXE_fragsim")));
    let (result, layouts) = collect_layouts(|| write_report(&options, &mut |_| Ok(())));
    result.unwrap();
    layouts
}

#[test]
fn no_chart_of_the_report_hides_data_under_its_legend_or_a_named_series() {
    let dir = tempfile::tempdir().unwrap();
    let layouts = report_layouts(dir.path());
    let mut drawn: Vec<String> = layouts.iter().map(|l| l.name.clone()).collect();
    drawn.sort();
    // Every PNG the report wrote went through the collector (none drawn some other way).
    assert_eq!(drawn, pngs(dir.path()));
    // The charts issue #37 named are among them (timing charts included).
    for name in [
        "resident-c-thread-pool",
        "resident-idle",
        "allocators-c-thread-pool",
        "containers-split-ratio-by-value-size",
        "containers-bytes-per-element",
        "arena-faults",
    ] {
        assert!(drawn.iter().any(|d| d == name), "{name} not drawn");
    }
    let problems: Vec<String> = layouts.iter().flat_map(Layout::problems).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // A chart with a legend recorded its plot and series (the check above is not vacuous).
    let legends = layouts
        .iter()
        .flat_map(|l| &l.plots)
        .filter(|p| p.legend.is_some());
    assert!(legends.clone().count() >= 40, "{} legends", legends.count());
}
