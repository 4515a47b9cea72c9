//! The main job: every table, chart and validation result, written into one folder with an
//! index. Each step is timed; the files themselves carry no timestamps, so re-running on an
//! unchanged tree rewrites identical tables and charts.

mod findings;

pub use findings::{seed_vs_physical_markdown, seed_vs_physical_table};

use crate::arena::ArenaSpec;
use crate::charts::{
    write_chart, Comparison, PredictedVsMeasured, RatioHeatmap, SeedChart, SeedSeries, WasteCurve,
};
use crate::export::{write_atomic, Csv, Markdown, Table, TableFormat};
use crate::layout::F14Vector;
use crate::live::{validate, validation_markdown, validation_table, ValidateOptions, Validation};
use crate::sizeclass::{class_table, AllocatorConfig, SizeClasses};
use crate::sweep::{
    physical_sweep, physical_table, seed_comparison_table, seed_model_ratio, seed_rows,
    PhysicalRow, SweepSpec,
};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the report covers.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    pub out: PathBuf,
    pub sweep: SweepSpec,
    pub validate: ValidateOptions,
    /// The arena scenario's workload and timed runs per strategy.
    pub arena: ArenaSpec,
    pub arena_runs: usize,
    /// The fragsim executable, to measure the arena scenario again in a child process with
    /// jemalloc's page decay off (decay is fixed at start-up). `None` skips that run.
    pub fragsim_exe: Option<PathBuf>,
}

impl ReportOptions {
    pub fn new(out: PathBuf) -> Self {
        ReportOptions {
            out,
            sweep: SweepSpec::default(),
            validate: ValidateOptions::reduced(),
            arena: ArenaSpec::seed(),
            arena_runs: 5,
            fragsim_exe: None,
        }
    }
}

/// One entry of the index: a file and what it shows.
#[derive(Clone, Debug)]
pub struct Written {
    pub file: String,
    pub what: String,
}

/// A step of the job, for the terminal.
#[derive(Clone, Debug)]
pub struct Step {
    pub name: String,
    pub took: Duration,
    pub files: Vec<String>,
}

/// What the job did.
#[derive(Clone, Debug)]
pub struct ReportSummary {
    pub steps: Vec<Step>,
    pub validation_passed: bool,
    pub mismatches: u64,
}

struct Job<'a> {
    dir: &'a Path,
    index: Vec<(String, Vec<Written>)>,
    steps: Vec<Step>,
    on_step: &'a mut dyn FnMut(&Step),
}

impl Job<'_> {
    fn step(
        &mut self,
        name: &str,
        section: &str,
        run: impl FnOnce(&Path) -> Result<Vec<Written>>,
    ) -> Result<()> {
        let start = Instant::now();
        let written = run(self.dir).with_context(|| format!("step '{name}'"))?;
        let step = Step {
            name: name.to_string(),
            took: start.elapsed(),
            files: written.iter().map(|w| w.file.clone()).collect(),
        };
        (self.on_step)(&step);
        self.steps.push(step);
        match self.index.iter_mut().find(|(s, _)| s == section) {
            Some((_, list)) => list.extend(written),
            None => self.index.push((section.to_string(), written)),
        }
        Ok(())
    }
}

fn write_table(dir: &Path, stem: &str, table: &Table, what: &str) -> Result<Vec<Written>> {
    let mut written = Vec::new();
    for format in [&Csv as &dyn TableFormat, &Markdown] {
        let file = format!("{stem}.{}", format.extension());
        write_atomic(&dir.join(&file), format.render(table)?.as_bytes())?;
        written.push(Written {
            file,
            what: what.to_string(),
        });
    }
    Ok(written)
}

fn charts_written(paths: Vec<PathBuf>, dir: &Path, what: &str) -> Vec<Written> {
    paths
        .into_iter()
        .map(|p| Written {
            file: p.strip_prefix(dir).unwrap_or(&p).display().to_string(),
            what: what.to_string(),
        })
        .collect()
}

fn page64k_dev() -> SizeClasses {
    let mut config = AllocatorConfig::preset("page64k").expect("known preset");
    config.large_page_rounding = true;
    SizeClasses::new(config).expect("valid config")
}

fn preset(name: &str) -> SizeClasses {
    SizeClasses::new(AllocatorConfig::preset(name).expect("known preset")).expect("valid preset")
}

/// Runs the whole job; `on_step` hears about each step as it finishes.
pub fn write_report(
    options: &ReportOptions,
    on_step: &mut dyn FnMut(&Step),
) -> Result<ReportSummary> {
    let dir = options.out.as_path();
    let charts = dir.join("charts");
    std::fs::create_dir_all(&charts)
        .with_context(|| format!("cannot create folder '{}'", charts.display()))?;
    let mut job = Job {
        dir,
        index: Vec::new(),
        steps: Vec::new(),
        on_step,
    };
    let builds = [
        (
            "default",
            "jemalloc 5.3.0 defaults: 16 B quantum, 4 KiB pages, large size classes",
        ),
        (
            "quantum8",
            "8 B quantum (the build the seed's figures match)",
        ),
        ("page64k", "64 KiB pages"),
        (
            "dev",
            "jemalloc 5.3.1-dev as tikv-jemalloc-sys ships it: large requests rounded to pages",
        ),
    ];

    job.step("size-class tables", "Size classes", |dir| {
        let mut written = Vec::new();
        for (name, what) in builds {
            if name == "dev" {
                continue; // same class table as default
            }
            let file = format!("classes-{name}.csv");
            write_atomic(
                &dir.join(&file),
                Csv.render(&class_table(&preset(name)))?.as_bytes(),
            )?;
            written.push(Written {
                file,
                what: format!("every size class, {what}"),
            });
        }
        Ok(written)
    })?;

    let mut sweeps: Vec<(&str, Vec<PhysicalRow>)> = Vec::new();
    job.step("physical F14 sweep", "F14 footprint tables", |dir| {
        let mut written = Vec::new();
        for (name, what) in builds {
            if name == "page64k" {
                continue;
            }
            let classes = preset(name);
            let rows = physical_sweep(&classes, &options.sweep)?;
            let table = physical_table(&classes, &rows);
            written.extend(write_table(
                dir,
                &format!("f14-physical-{name}"),
                &table,
                &format!(
                    "F14 vector tables split vs unified, every value size x capacity step, {what}"
                ),
            )?);
            sweeps.push((name, rows));
        }
        Ok(written)
    })?;

    job.step("seed comparison", "The seed (folly D8485933)", |dir| {
        let q8 = preset("quantum8");
        let seed = seed_rows();
        let mut written = write_table(
            dir,
            "seed-model",
            &seed_comparison_table(&q8, &seed)?,
            "the seed's printed footprint table beside our reproduction of its model",
        )?;
        let default_rows = &sweeps
            .iter()
            .find(|(n, _)| *n == "default")
            .expect("default sweep")
            .1;
        let q8_rows = &sweeps
            .iter()
            .find(|(n, _)| *n == "quantum8")
            .expect("quantum8 sweep")
            .1;
        let dev_rows = &sweeps
            .iter()
            .find(|(n, _)| *n == "dev")
            .expect("dev sweep")
            .1;
        let table = seed_vs_physical_table(&q8, &seed, default_rows, q8_rows, dev_rows);
        let md = seed_vs_physical_markdown(&table, default_rows)?;
        write_atomic(&dir.join("seed-vs-physical.md"), md.as_bytes())?;
        written.push(Written {
            file: "seed-vs-physical.md".into(),
            what: "the seed's model against the physically exact ratios, and why they differ"
                .into(),
        });
        Ok(written)
    })?;

    let mut validation: Option<Validation> = None;
    job.step("live validation", "Live validation", |dir| {
        let v = validate(&options.validate)?;
        let md = validation_markdown(&v, "fragsim report")?;
        write_atomic(&dir.join("validation.md"), md.as_bytes())?;
        write_atomic(&dir.join("validation.csv"), Csv.render(&validation_table(&v))?.as_bytes())?;
        validation = Some(v);
        Ok(vec![
            Written { file: "validation.md".into(), what: "every prediction checked against the running jemalloc, predicted beside measured".into() },
            Written { file: "validation.csv".into(), what: "the same checks as CSV".into() },
        ])
    })?;
    let validation = validation.expect("validation ran");

    job.step("charts", "Charts", |dir| {
        let charts = dir.join("charts");
        let mut written = Vec::new();
        let largest = |rows: &[PhysicalRow]| -> Vec<(u64, f64)> {
            let top = rows.iter().map(|r| r.table.capacity).max().unwrap_or(0);
            rows.iter()
                .filter(|r| r.table.capacity == top && (24..=256).contains(&r.table.value_size))
                .map(|r| (r.table.value_size, r.ratio()))
                .collect()
        };
        let rows_of = |name: &str| &sweeps.iter().find(|(n, _)| *n == name).expect("sweep").1;
        let q8 = preset("quantum8");
        let seed = seed_rows();
        let top_cap = options.sweep.max_capacity;
        let seed_chart = SeedChart {
            series: vec![
                SeedSeries { label: "seed's printed table (D8485933)".into(), points: seed.iter().map(|r| (r.value_size, r.ratio)).collect(), markers: true, width: 0 },
                SeedSeries { label: "fragsim: seed model, 8 B quantum".into(), points: seed.iter().filter_map(|r| Some((r.value_size, seed_model_ratio(&q8, r.value_size)?))).collect(), markers: false, width: 3 },
                SeedSeries { label: format!("fragsim: physical, default build, {} values", F14Vector::capacity_steps(top_cap).last().copied().unwrap_or(0)), points: largest(rows_of("default")), markers: false, width: 9 },
                SeedSeries { label: "fragsim: physical, 8 B quantum (same classes above 128 B)".into(), points: largest(rows_of("quantum8")), markers: false, width: 3 },
                SeedSeries { label: "fragsim: physical, 5.3.1-dev (large requests in pages)".into(), points: largest(rows_of("dev")), markers: false, width: 3 },
            ],
        };
        written.extend(charts_written(write_chart(&seed_chart, &charts)?, dir,
            "footprint change against sizeof(value_type): the seed's table, our reproduction, and the physically exact ratio for large tables"));

        let default_rows = rows_of("default");
        let mut value_sizes: Vec<u64> = default_rows.iter().map(|r| r.table.value_size).collect();
        value_sizes.dedup();
        let capacities = F14Vector::capacity_steps(options.sweep.max_capacity);
        let ratios = value_sizes.iter().map(|&s| {
            capacities.iter().map(|&c| {
                default_rows.iter().find(|r| r.table.value_size == s && r.table.capacity == c).map_or(1.0, |r| r.ratio())
            }).collect()
        }).collect();
        let heatmap = RatioHeatmap { subtitle: "default jemalloc 5.3.0 build".into(), value_sizes, capacities, ratios };
        written.extend(charts_written(write_chart(&heatmap, &charts)?, dir,
            "the after / before ratio over value size and table size (blue: one block is cheaper; red: dearer)"));

        let waste = WasteCurve {
            builds: vec![
                ("default: 16 B quantum, 4 KiB pages (64 KiB pages give the same classes)".into(), preset("default")),
                ("quantum8: 8 B quantum".into(), preset("quantum8")),
                ("page64k as 5.3.1-dev rounds it: large requests (above 224 KiB) in whole 64 KiB pages".into(), page64k_dev()),
            ],
            max_request: 4 << 20,
        };
        written.extend(charts_written(write_chart(&waste, &charts)?, dir,
            "internal fragmentation against request size: the sawtooth of the size classes for three builds"));

        let label = |m: &crate::live::F14Measurement| format!("{} B x {} {}", m.value_size, m.capacity, m.layout);
        let pvm = PredictedVsMeasured {
            subtitle: format!("live jemalloc {}", validation.model.label()),
            usable: validation.f14.iter().map(|m| Comparison { label: label(m), predicted: m.predicted_usable, measured: m.measured_usable }).collect(),
            active: validation.f14.iter().map(|m| Comparison { label: label(m), predicted: m.predicted_active, measured: m.measured_active }).collect(),
        };
        written.extend(charts_written(write_chart(&pvm, &charts)?, dir,
            "from the live validation: measured bytes against predicted bytes, every F14 row; mismatches marked"));
        Ok(written)
    })?;

    let arena_section = "Arena scenario (the second seed)";
    job.step("arena scenario", arena_section, |dir| {
        let result = crate::cli::run_scenario(options.arena, options.arena_runs, false, None)?;
        let paths = crate::cli::write_arena(&result, dir, "arena", "fragsim report")?;
        Ok(arena_written(&paths, dir, "jemalloc defaults"))
    })?;
    if let Some(exe) = &options.fragsim_exe {
        job.step("arena scenario, decay off", arena_section, |dir| {
            let paths = arena_without_decay(exe, options, dir)?;
            Ok(arena_written(&paths, dir, "jemalloc page decay off"))
        })?;
    }

    let index = index_markdown(&job.index);
    write_atomic(&dir.join("README.md"), index.as_bytes())?;
    Ok(ReportSummary {
        steps: job.steps,
        validation_passed: validation.passed(),
        mismatches: validation.mismatches,
    })
}

/// Index entries for the files of one arena run.
fn arena_written(paths: &[PathBuf], dir: &Path, config: &str) -> Vec<Written> {
    let what = |p: &PathBuf| {
        match p.extension().and_then(|e| e.to_str()) {
        Some("md") => format!("{config}: general allocator vs bump arena vs no-free arena, predicted and measured bytes, build and reset times (times vary run to run), ratios beside the seed's"),
        Some("csv") => format!("{config}: the same comparison as CSV"),
        _ if p.to_string_lossy().contains("-time") => format!("{config}: build and reset time per strategy (median; varies run to run)"),
        _ => format!("{config}: memory per strategy, ideal, predicted and measured usable bytes, active pages"),
    }
    };
    paths
        .iter()
        .map(|p| Written {
            file: p.strip_prefix(dir).unwrap_or(p).display().to_string(),
            what: what(p),
        })
        .collect()
}

/// jemalloc reads its decay settings once, at start-up: run `fragsim arena` again in a child
/// process with decay off, writing `arena-nodecay.*` beside the rest.
fn arena_without_decay(exe: &Path, options: &ReportOptions, dir: &Path) -> Result<Vec<PathBuf>> {
    let stem = "arena-nodecay";
    let output = std::process::Command::new(exe)
        .env("_RJEM_MALLOC_CONF", "dirty_decay_ms:-1,muzzy_decay_ms:-1")
        .args(["arena", "--name", stem, "--out"])
        .arg(dir)
        .args(["--vectors", &options.arena.vectors.to_string()])
        .args(["--elements", &options.arena.elements.to_string()])
        .args(["--elem-bytes", &options.arena.elem_bytes.to_string()])
        .args(["--runs", &options.arena_runs.to_string()])
        .output()
        .with_context(|| format!("cannot run '{}'", exe.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        anyhow::bail!(
            "'fragsim arena' with decay off failed: {}",
            stderr.lines().next().unwrap_or("no message")
        );
    }
    let mut paths = vec![
        dir.join(format!("{stem}.md")),
        dir.join(format!("{stem}.csv")),
    ];
    for chart in ["time", "bytes"] {
        for ext in ["png", "svg"] {
            paths.push(dir.join("charts").join(format!("{stem}-{chart}.{ext}")));
        }
    }
    Ok(paths)
}

fn index_markdown(index: &[(String, Vec<Written>)]) -> String {
    let mut out = String::from(
        "# fragsim reports\n\nWritten by `cargo run --release -- report`, which regenerates every file listed here. The `validation-<variant>.md/.csv` files beside them come from `scripts/validate-variants.sh` (one per jemalloc build).\n",
    );
    for (section, files) in index {
        out.push_str(&format!("\n## {section}\n\n"));
        let (charts, tables): (Vec<&Written>, Vec<&Written>) = files
            .iter()
            .partition(|w| w.file.ends_with(".png") || w.file.ends_with(".svg"));
        for w in &tables {
            out.push_str(&format!("- [{}]({}): {}\n", w.file, w.file, w.what));
        }
        for w in charts.iter().filter(|w| w.file.ends_with(".png")) {
            let stem = w.file.trim_end_matches(".png");
            out.push_str(&format!(
                "\n![{stem}]({})\n\n{} ([SVG]({stem}.svg))\n",
                w.file, w.what
            ));
        }
    }
    out
}
