//! The main job: every table, chart and validation result, written into one folder with an
//! index. Each step is timed; the files themselves carry no timestamps, so re-running on an
//! unchanged tree rewrites identical tables and charts.

mod figures;
mod findings;

pub use figures::Sweeps;

pub use findings::{seed_vs_physical_markdown, seed_vs_physical_table};

use crate::charts::write_chart;
use crate::experiments::bump_arena::BumpArenaSpec;
use crate::experiments::sweep::{
    physical_sweep, physical_table, seed_comparison_table, seed_rows, PhysicalRow, SweepSpec,
};
use crate::export::{write_atomic, Csv, Markdown, Table, TableFormat};
use crate::sizeclass::{class_table, Preset};
use crate::validate::{
    validate, validation_markdown, validation_table, ValidateOptions, Validation,
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
    pub arena: BumpArenaSpec,
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
            arena: BumpArenaSpec::seed(),
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
    job.step("size-class tables", "Size classes", |dir| {
        let mut written = Vec::new();
        // The dev build has the default's class table.
        for preset in [Preset::Default, Preset::Quantum8, Preset::Page64k] {
            let file = format!("classes-{}.csv", preset.name());
            write_atomic(
                &dir.join(&file),
                Csv.render(&class_table(&preset.classes()))?.as_bytes(),
            )?;
            written.push(Written {
                file,
                what: format!("every size class, {}", preset.description()),
            });
        }
        Ok(written)
    })?;

    let mut sweeps: Option<Sweeps> = None;
    job.step("physical F14 sweep", "F14 footprint tables", |dir| {
        let mut written = Vec::new();
        let mut sweep = |preset: Preset, name: &str| -> Result<Vec<PhysicalRow>> {
            let classes = preset.classes();
            let what = preset.description();
            let rows = physical_sweep(&classes, &options.sweep)?;
            let what = format!(
                "F14 vector tables split vs unified, every value size x capacity step, {what}"
            );
            let stem = format!("f14-physical-{name}");
            written.extend(write_table(
                dir,
                &stem,
                &physical_table(&classes, &rows),
                &what,
            )?);
            Ok(rows)
        };
        sweeps = Some(Sweeps {
            default: sweep(Preset::Default, "default")?,
            quantum8: sweep(Preset::Quantum8, "quantum8")?,
            dev: sweep(Preset::V5_3_1, "dev")?,
        });
        Ok(written)
    })?;
    let sweeps = sweeps.expect("sweeps ran");

    job.step("seed comparison", "The seed (folly D8485933)", |dir| {
        let q8 = Preset::Quantum8.classes();
        let seed = seed_rows();
        let what = "the seed's printed footprint table beside our reproduction of its model";
        let mut written =
            write_table(dir, "seed-model", &seed_comparison_table(&q8, &seed)?, what)?;
        let table =
            seed_vs_physical_table(&q8, &seed, &sweeps.default, &sweeps.quantum8, &sweeps.dev);
        let md = seed_vs_physical_markdown(&table, &sweeps.default)?;
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
        write_atomic(
            &dir.join("validation.csv"),
            Csv.render(&validation_table(&v))?.as_bytes(),
        )?;
        validation = Some(v);
        let written = |file: &str, what: &str| Written {
            file: file.into(),
            what: what.into(),
        };
        Ok(vec![
            written(
                "validation.md",
                "every prediction checked against the running jemalloc, predicted beside measured",
            ),
            written("validation.csv", "the same checks as CSV"),
        ])
    })?;
    let validation = validation.expect("validation ran");

    job.step("charts", "Charts", |dir| {
        let charts = dir.join("charts");
        let mut written = Vec::new();
        let mut add = |paths: Vec<PathBuf>, what: &str| {
            written.extend(paths.into_iter().map(|p| Written {
                file: p.strip_prefix(dir).unwrap_or(&p).display().to_string(),
                what: what.to_string(),
            }));
        };
        let heatmap = figures::ratio_heatmap(&sweeps.default, options.sweep.max_capacity);
        add(
            write_chart(&figures::seed_chart(&sweeps, &seed_rows()), &charts)?,
            "footprint change against sizeof(value_type): the seed's table, our reproduction, \
             and the physically exact ratio for large tables",
        );
        add(
            write_chart(&heatmap, &charts)?,
            "the after / before ratio over value size and table size \
             (blue: one block is cheaper; red: dearer)",
        );
        add(
            write_chart(&figures::waste_curve(), &charts)?,
            "internal fragmentation against request size: \
             the sawtooth of the size classes for three builds",
        );
        add(
            write_chart(&figures::predicted_vs_measured(&validation), &charts)?,
            "from the live validation: measured bytes against predicted bytes, \
             every F14 row; mismatches marked",
        );
        Ok(written)
    })?;

    let arena_section = "Arena scenario (the second seed)";
    job.step("arena scenario", arena_section, |dir| {
        let result = crate::experiments::bump_arena::run_scenario(
            options.arena,
            options.arena_runs,
            false,
            None,
        )?;
        let paths = crate::experiments::bump_arena::write_bump_arena(
            &result,
            dir,
            "arena",
            "fragsim report",
        )?;
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
        mismatches: validation.mismatches(),
    })
}

/// Index entries for the files of one arena run.
fn arena_written(paths: &[PathBuf], dir: &Path, config: &str) -> Vec<Written> {
    let what = |p: &PathBuf| -> &str {
        match p.extension().and_then(|e| e.to_str()) {
            Some("md") => {
                "general allocator vs bump arena vs no-free arena: predicted and measured \
                 bytes, build and reset times (times vary run to run), ratios beside the seed's"
            }
            Some("csv") => "the same comparison as CSV",
            _ if p.to_string_lossy().contains("-time") => {
                "build and reset time per strategy (median; varies run to run)"
            }
            _ => "memory per strategy: ideal, predicted and measured usable bytes, active pages",
        }
    };
    paths
        .iter()
        .map(|p| Written {
            file: p.strip_prefix(dir).unwrap_or(p).display().to_string(),
            what: format!("{config}: {}", what(p)),
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
