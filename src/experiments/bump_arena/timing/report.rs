//! The timing comparison as report text: a committed part with nothing that changes from run
//! to run but coarsely (page faults in thousands, where the chunks lived, ratio ranges recorded
//! over several runs), and a part with this run's times, for a file that is not committed.

use super::{
    cxx_table, ratio_table, stats_table, summarize, summarize_cxx, timing_table, ChildReport,
    CxxOutput, JemallocSetting, Summary, TimedStrategy,
};
use crate::charts::GroupedBars;
use crate::export::{Markdown, Table, TableFormat};
use anyhow::Result;

/// Everything one timing run measured.
#[derive(Clone, Debug, Default)]
pub struct TimingRun {
    pub children: Vec<(JemallocSetting, ChildReport)>,
    pub cxx: CxxOutput,
}

/// Page faults in whole thousands, rounded down: the counts wander by a few dozen between
/// runs, and none of the seed workload's counts sits near a multiple of 1,000.
fn thousands(n: u64) -> String {
    format!("{}k", n / 1000)
}

/// Warm page faults: under decay (10 s on the wall clock) a warm `Vec<Vec<i32>>` build meets
/// between 1k and 19k faults depending on how fast the machine ran it (5k-6k idle, more under
/// load), so that band is one cell; the others are stable to the thousand.
fn warm_thousands(n: u64) -> String {
    match n / 1000 {
        1..=19 => "1k-19k".into(),
        _ => thousands(n),
    }
}

/// Warm faults of a general-allocator build with decay on the wall clock: anywhere from none
/// (the build reused the previous build's dirty pages) to a whole build's (it took fresh pages
/// beside them; 37k and 56k seen on a loaded machine), so
/// the cell says so and this run's count is in the times file; with decay off, or with an
/// arena, the count is stable.
fn warm_faults_cell(setting: JemallocSetting, strategy: TimedStrategy, n: u64) -> String {
    let wall_clock = setting != JemallocSetting::DecayOff && strategy == TimedStrategy::General;
    if wall_clock {
        "varies with decay".into()
    } else {
        warm_thousands(n)
    }
}

/// Page faults per build + reset, cold and warm, rounded to thousands.
pub fn faults_table(summaries: &[Summary]) -> Table {
    let mut table = Table::new(
        "page faults per build + reset (thousands, rounded down)",
        &["jemalloc", "strategy", "what", "cold", "warm (fewest)"],
    );
    for s in summaries {
        table.push(vec![
            s.setting.key().into(),
            s.strategy.key().into(),
            s.strategy.describe().into(),
            thousands(s.cold.faults.0).into(),
            warm_faults_cell(s.setting, s.strategy, s.warm.faults.0).into(),
        ]);
    }
    table
}

/// Where the large blocks lived at the peak, from jemalloc's statistics. (How many bytes they
/// were at the sampled peak, and what was purged and left dirty, vary with timing: they are in
/// the times file.)
fn placement_table(children: &[(JemallocSetting, ChildReport)]) -> Table {
    let stats = stats_table(children);
    let col = |name: &str| stats.column(name).expect("stats column");
    let picked = [
        col("jemalloc"),
        col("strategy"),
        col("huge_arena"),
        col("large_arena_at_peak"),
    ];
    let mut table = Table::new(
        "jemalloc statistics at the peak of the last build",
        &[
            "jemalloc",
            "strategy",
            "huge arena",
            "arena holding the most large bytes",
        ],
    );
    for row in &stats.rows {
        table.push(picked.iter().map(|&c| row[c].clone()).collect());
    }
    table
}

/// The cell committed for jemalloc's dirty pages after the C++ program's last reset. With
/// decay on the wall clock, `std`'s freed slabs are purged on jemalloc's schedule, so their
/// count moves run to run (9k-14k seen): that cell says so and this run's count goes to the
/// times file. With decay off, or for the arenas (nothing left to purge), it is stable.
fn cxx_dirty_cell(allocator: &str, strategy: &str, pages: u64, exact: bool) -> String {
    let wall_clock = allocator.starts_with("jemalloc") && !allocator.ends_with("decay-off");
    if wall_clock && strategy == "std" && !exact {
        "varies with decay (this run's: timing/)".into()
    } else {
        thousands(pages)
    }
}

/// C++ page faults per allocator and strategy, rounded to thousands; `exact` gives every
/// dirty-page count as measured (for the uncommitted times file).
fn cxx_faults_table(cxx: &CxxOutput, exact: bool) -> Table {
    let mut table = Table::new(
        "the seed's C++ program: page faults per build + reset (thousands)",
        &[
            "allocator",
            "strategy",
            "cold",
            "warm",
            "jemalloc dirty pages after the last reset",
        ],
    );
    for s in summarize_cxx(&cxx.runs) {
        let last = cxx
            .runs
            .iter()
            .filter(|r| r.allocator == s.allocator && r.strategy == s.strategy)
            .max_by_key(|r| r.run);
        let dirty = match last {
            Some(r) if r.jemalloc_pdirty >= 0 => {
                cxx_dirty_cell(&s.allocator, &s.strategy, r.jemalloc_pdirty as u64, exact)
            }
            _ => "-".to_string(),
        };
        table.push(vec![
            s.allocator.as_str().into(),
            s.strategy.as_str().into(),
            thousands(s.cold.faults.0).into(),
            warm_thousands(s.warm.faults.0).into(),
            dirty.into(),
        ]);
    }
    table
}

fn render(out: &mut String, table: &Table) -> Result<()> {
    let mut table = table.clone();
    table.title.clear();
    out.push_str(&Markdown.render(&table)?);
    out.push('\n');
    Ok(())
}

/// The committed section: method, page faults, jemalloc statistics, ratio ranges recorded
/// over several runs, and what they mean.
pub fn timing_section(run: &TimingRun, command: &str) -> Result<String> {
    let summaries = summarize(&run.children);
    let mut out = String::from(
        "## Time, measured fairly: cold and warm, arena variants, jemalloc settings\n\n",
    );
    out.push_str(&format!(
        "Produced by `{command}`. Each (jemalloc setting, strategy) pair runs in its own child process (jemalloc reads its options at start-up, and a process's first build meets fresh pages). Run 1 is **cold**, runs 2 and later are **warm**; they are reported apart. `Vec<Vec<i32>>` runs in several children of two builds each (one cold, one warm): with decay on the wall clock its warm build sometimes takes fresh pages while the previous build's freed slabs are still dirty (jemalloc's statistics show them dirty, not purged, beside the new build), so one child of six builds came to hold up to three builds' worth of pages (1.3 GB); two builds per child bound it at two. Page faults are `getrusage` minor + major faults of the build and the reset; jemalloc's statistics are read between build and reset and after the reset, outside the timings. This run's times and exact ratios are in `reports/timing/arena-times.md` (not committed: times differ from run to run).\n\n"
    ));
    out.push_str("jemalloc settings (`_RJEM_MALLOC_CONF` of each child): `defaults`; `decay-off` = `dirty_decay_ms:-1,muzzy_decay_ms:-1`; `no-huge-arena` = `oversize_threshold:0`; `oversize-1g` = `oversize_threshold:1073741824`.\n\n");
    render(&mut out, &faults_table(&summaries))?;
    render(&mut out, &placement_table(&run.children))?;
    out.push_str(RATIO_RANGES_MD);
    out.push('\n');
    if !run.cxx.runs.is_empty() {
        render(&mut out, &cxx_faults_table(&run.cxx, false))?;
    }
    for reason in &run.cxx.skipped {
        out.push_str(&format!(
            "The seed's C++ program was skipped in part: {reason}.\n\n"
        ));
    }
    out.push_str(EXPLANATION_MD);
    Ok(out)
}

/// The uncommitted file: this run's times, ratios and full statistics.
pub fn times_markdown(run: &TimingRun, command: &str) -> Result<String> {
    let summaries = summarize(&run.children);
    let mut out = format!(
        "# Arena timing: this run's times\n\nProduced by `{command}`. Not committed: times vary from run to run. Cold = run 1 of a fresh process (the median over `Vec<Vec<i32>>`'s children of two builds), warm = the median of runs 2 and later.\n\n"
    );
    for table in [
        timing_table(&summaries, true),
        ratio_table(&summaries),
        stats_table(&run.children),
    ] {
        out.push_str(&format!("## {}\n\n", table.title));
        render(&mut out, &table)?;
    }
    if !run.cxx.runs.is_empty() {
        for table in [
            cxx_table(&summarize_cxx(&run.cxx.runs), true),
            cxx_faults_table(&run.cxx, true),
        ] {
            out.push_str(&format!("## {}\n\n", table.title));
            render(&mut out, &table)?;
        }
    }
    Ok(out)
}

/// Warm page faults per strategy and setting (thousands, rounded: stable enough to commit).
pub fn faults_chart(summaries: &[Summary], name: &str) -> GroupedBars {
    let strategies: Vec<TimedStrategy> = TimedStrategy::ALL
        .into_iter()
        .filter(|t| summaries.iter().any(|s| s.strategy == *t))
        .collect();
    let series = JemallocSetting::ALL
        .into_iter()
        .filter(|j| summaries.iter().any(|s| s.setting == *j))
        .map(|setting| {
            let values = strategies
                .iter()
                .map(|t| {
                    summaries
                        .iter()
                        .find(|s| s.setting == setting && s.strategy == *t)
                        .map_or(0.0, |s| (s.warm.faults.0 / 1000) as f64)
                })
                .collect();
            (setting.key().to_string(), values)
        })
        .collect();
    GroupedBars {
        name: name.to_string(),
        title: "Page faults of a warm build + reset (fewest over each process's later builds)"
            .into(),
        y_desc: "thousands of page faults (rounded down)".into(),
        categories: strategies.iter().map(|t| t.key().to_string()).collect(),
        series,
        decimals: 0,
    }
}

/// Warm build + reset time per strategy and setting (for the uncommitted folder).
pub fn time_chart(summaries: &[Summary], name: &str) -> GroupedBars {
    let mut chart = faults_chart(summaries, name);
    chart.title = "Warm build + reset time (median of each process's later builds)".into();
    chart.y_desc = "milliseconds".into();
    chart.decimals = 0;
    for (label, values) in &mut chart.series {
        for (value, category) in values.iter_mut().zip(&chart.categories) {
            *value = summaries
                .iter()
                .find(|s| s.setting.key() == label && s.strategy.key() == category)
                .map_or(0.0, |s| s.warm.total_ms);
        }
    }
    chart
}

/// Build + reset ratios to the general allocator, recorded over several full runs of
/// `fragsim bump-arena --timing` (see the table's caption): the committed file quotes ranges, never one
/// run's figure.
pub const RATIO_RANGES_MD: &str = r#"### Build + reset time over the general allocator's: ranges over six full runs

Recorded on 2026-11-30 from six full timing runs (five of `fragsim bump-arena --timing` and one `fragsim report`: 1,000,000 x 100 `i32`, 6 builds per child) on this machine (2 cores shared with other jobs, so the ranges are wide; the page faults above explain the direction). Below 1 the variant is faster than `Vec<Vec<i32>>` under the same jemalloc setting. Each run's exact ratios go to the uncommitted times file. The seed printed about 0.5 for build + reset ("roughly twice as fast") and just under 0.5 for the reset alone, no-free over monotonic.

| jemalloc | strategy | cold | warm | seed |
|---|---|---:|---:|---:|
| defaults | arena | 0.74-1.02 | 0.97-3.84 | about 0.5 |
| defaults | no-free | 0.70-1.32 | 1.09-5.65 | about 0.5 |
| defaults | reused | 0.67-1.37 | 0.12-0.72 | about 0.5 |
| defaults | presized | 0.70-1.52 | 1.04-5.39 | about 0.5 |
| decay-off | arena | 0.75-1.03 | 0.58-1.26 | about 0.5 |
| decay-off | no-free | 0.71-1.71 | 0.54-1.78 | about 0.5 |
| decay-off | reused | 0.74-1.78 | 0.48-1.66 | about 0.5 |
| decay-off | presized | 0.74-1.76 | 0.54-1.42 | about 0.5 |
| no-huge-arena | arena | 0.37-1.03 | 2.85-4.29 | about 0.5 |
| no-huge-arena | no-free | 0.69-1.54 | 3.44-9.59 | about 0.5 |
| no-huge-arena | reused | 0.88-1.16 | 0.33-0.78 | about 0.5 |
| no-huge-arena | presized | 0.60-1.13 | 2.69-3.90 | about 0.5 |
| oversize-1g | arena | 0.78-0.99 | 0.53-0.76 | about 0.5 |
| oversize-1g | no-free | 0.65-0.96 | 0.50-0.72 | about 0.5 |
| oversize-1g | reused | 0.76-0.98 | 0.55-0.73 | about 0.5 |
| oversize-1g | presized | 0.89-1.03 | 0.49-0.83 | about 0.5 |

The reset alone, no-free over arena (the seed: just under 0.5), the five `--timing` runs: the destructor calls it skips cost 1.6-14 ms warm, but under jemalloc's defaults and with `oversize_threshold:0` both resets are dominated by purging the chunks (about 100-170 ms, up to 500 ms on a busy machine), so the ratio is near 1.

| jemalloc | cold | warm |
|---|---:|---:|
| defaults | 0.64-1.62 | 0.79-1.51 |
| decay-off | 0.004-0.014 | 0.001-0.012 |
| no-huge-arena | 0.92-1.93 | 0.81-3.22 |
| oversize-1g | 0.002-0.013 | 0.002-0.012 |

The seed's C++ program over its `std::vector` build, same six runs (`monotonic` and `nofree` reuse one preallocated buffer, as the seed did; `-fresh` allocate it in every build):

| allocator | strategy | cold | warm | seed |
|---|---|---:|---:|---:|
| glibc | monotonic | 0.55-0.79 | 0.09-0.12 | about 0.5 |
| glibc | nofree | 0.61-0.83 | 0.08-0.13 | about 0.5 |
| glibc | monotonic-fresh | 0.74-0.93 | 0.76-0.89 | about 0.5 |
| glibc | nofree-fresh | 0.76-1.02 | 0.76-0.86 | about 0.5 |
| jemalloc 5.3.0 | monotonic | 0.46-0.60 | 0.08-0.10 | about 0.5 |
| jemalloc 5.3.0 | nofree | 0.51-0.63 | 0.07-0.08 | about 0.5 |
| jemalloc 5.3.0 | monotonic-fresh | 0.64-0.80 | 0.62-0.76 | about 0.5 |
| jemalloc 5.3.0 | nofree-fresh | 0.64-0.84 | 0.66-0.74 | about 0.5 |
"#;

/// What the measurements say, written from them (see the tables above).
pub const EXPLANATION_MD: &str = r#"### Is the arena faster, and why

**Page faults decide it.** One build of the seed's workload writes about 105,000 fresh 4 KiB pages (412 to 488 MiB, depending on the variant). A strategy whose previous build left those pages mapped builds warm; one whose pages went back to the kernel pays about 105,000 page faults again, every build, and is then slower whatever its allocation count. The tables above measure it:

- **jemalloc's defaults.** Every bumpalo chunk here (32 to 256 MiB; 412 MiB pre-sized; 512 MiB once a reused arena has grown) is above `opt.oversize_threshold` (8 MiB), so it is served by the huge arena (index `opt.narenas`, the "huge arena" column; the statistics find the large blocks there at the peak). jemalloc purges a freed extent of that size at once (src/extent.c `extent_record`: "Shortcut to purge the oversize extent eagerly"; the huge arena also runs with dirty decay 0, src/arena.c `arena_create_huge_arena`): jemalloc's `dirty_purged` counts about 464 MiB purged per warm build and almost nothing stays dirty after the reset (full statistics in the times file), and about 105k page faults again in every warm build of the dropped and pre-sized arenas. `Vec<Vec<i32>>` puts its 400-byte blocks in 448-byte slabs of arena 0, whose freed pages stay dirty (about 430 MiB after the reset) and are reused: its warm builds fault only about 6k pages (its 24 MB outer array, which is in the huge arena too), unless, with decay running on the wall clock, the build takes fresh pages while the previous build's slabs are still dirty (then up to about 113k: seen in some of the recorded runs; jemalloc's statistics then show those pages dirty beside the new build, not purged). So under the defaults the dropped arena is slower warm, and a pre-sized arena that is dropped is no better: its single chunk is purged like the others.
- **Reused arena (`Bump::reset`).** The arena keeps its largest chunk mapped. The second build still grows (a 512 MiB chunk: about 55k faults) and the third first touches the rest of that chunk (about 62k); from the fourth build on everything fits in pages already mapped and warm builds fault nothing (hence at least 6 builds per child: the warm median is then a steady-state build). It is the one variant that wins under jemalloc's defaults.
- **Decay off** keeps every freed page dirty, the huge arena's included: no warm faults for any strategy; the arenas are then about even with `Vec<Vec<i32>>` or faster (the warm ranges above are wide: with the faults gone, what is left is the build itself, on a shared machine).
- **`oversize_threshold:0`** turns the huge arena off but does not stop the purge: the chunks move to arena 0, which was created before the option was read and keeps the 8 MiB eager-purge threshold (src/arena.c `arena_init_huge` only updates arena 0's threshold when the huge arena is enabled). The arenas still fault about 105k pages per warm build.
- **`oversize_threshold:1073741824`** (above every chunk) keeps the chunks in arena 0 under the normal 10 s decay: no purge, no warm faults, and every arena variant beats `Vec<Vec<i32>>` warm.

Cold (first build of a process) every strategy faults all its pages, and the arenas are about even with `Vec<Vec<i32>>` or modestly faster.

**The seed's C++ program** shows the same mechanism from the other side. Its `std::vector` builds re-fault every time: under glibc (about 101k-107k faults per warm build: glibc returns the freed top of its heap to the kernel) and under Debian's jemalloc 5.3.0 (about 115k). There the arena never pays more faults than the general allocator: with the preallocated buffer reused across builds, as in the seed, the arena's warm builds fault nothing and are about 10x faster; with a fresh buffer per build both fault everything and the arena still wins modestly. The seed's "about twice as fast" lies between the two. Why Debian's 5.3.0 re-faults where fragsim's 5.3.1 reuses the slabs: in 5.3.0 a freed slab coalesces with its free neighbours without bound (src/extent.c `extent_record`), so a whole build's slabs merge into one extent above 8 MiB and are purged eagerly (with decay off the merged extent stays dirty but is too large to be split for new slabs, `opt.lg_extent_max_active_fit`: in the `decay-off` row the dirty pages grow by a build's worth each time while every build still faults); 5.3.1 caps that coalescing at 64x the freed extent. This comes from reading both versions' source beside the fault counts; the Rust and C++ programs also differ, so the version is not isolated.

**What a user should do.** Under jemalloc's defaults an arena that is dropped after each build gives its pages back and re-faults them on the next: reuse the arena (`Bump::reset`, or keep the buffer, as the seed did), which is faster than `Vec<Vec<i32>>` from the fourth build on. If the arena must be dropped, keep its chunks under `oversize_threshold` (8 MiB; bumpalo doubles its chunks without a cap, so that means smaller arenas: at 10,000 vectors (`fragsim bump-arena --timing --vectors 10000`), whose chunks stay under 8 MiB, the dropped arena's warm builds fault nothing) or raise the threshold above them (`MALLOC_CONF=oversize_threshold:1073741824`; `_RJEM_MALLOC_CONF` for tikv-jemallocator builds); turning the huge arena off (`oversize_threshold:0`) is not enough for the main thread. Turning decay off also works but keeps every freed page resident. Pre-sizing (`Bump::with_capacity`) saves the chunk growth, not the page faults.
"#;

#[cfg(test)]
mod tests {
    use super::cxx_dirty_cell;

    #[test]
    fn only_wall_clock_decay_makes_the_committed_dirty_cell_a_band() {
        // Allocator names as the seed's C++ program prints them (reports/arena.md).
        let j = "jemalloc 5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c";
        let off = format!("{j} decay-off");
        assert_eq!(cxx_dirty_cell(j, "std", 10_500, true), "10k");
        assert!(cxx_dirty_cell(j, "std", 10_500, false).starts_with("varies"));
        assert_eq!(cxx_dirty_cell(j, "monotonic", 0, false), "0k");
        assert_eq!(cxx_dirty_cell(&off, "std", 224_876, false), "224k");
        assert_eq!(cxx_dirty_cell("glibc", "std", 0, false), "0k");
    }
}
