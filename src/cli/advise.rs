//! `fragsim advise TRACE`: which run-time options would lower the process's memory. Every
//! option is checked into a [`Plan`] before the trace is read; then one replay under every
//! setting, the table, the chart, and the live check of the recommended settings.

use super::args::refuse_outputs_over_inputs;
use crate::advise::{
    advice_chart, advice_table, advise_stream, default_grid, notes, parse_grid, rebase,
    verify_recommended, LiveCheck, LivePlan, ModelMachine, Objective, Setting, LINKED_BASELINE,
};
use crate::analysis::TraceSource;
use crate::charts::{render_png, render_svg};
use crate::export::{Format, OutputFile};
use crate::process::{
    machine_coarse_clock_ns, machine_cpus, machine_vaddr_bits, DecayClock, RecordedAllocator,
};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub(crate) struct AdviseArgs {
    /// The trace (any form `fragsim replay` reads; threads and times are used).
    pub trace: PathBuf,
    /// Settings to compare, one MALLOC_CONF a line, optionally `preset=5.3.0 ` before it,
    /// `#` comments (default: the built-in grid: tcache, tcache_max, lg_tcache_nslots_mul,
    /// narenas, oversize_threshold, 5.3.0 vs 5.3.1, dirty_decay_ms 10000/1000/100/0). The
    /// defaults row (decay off) always comes first. A line naming one decay option runs the
    /// other at jemalloc's default; decay above 0 ms needs a trace with times (else skipped).
    #[arg(long, value_name = "FILE")]
    pub grid: Option<PathBuf>,
    /// What to rank the settings by and recommend for (every figure's change is shown).
    #[arg(long, value_parser = super::choice::choice::<Objective>(), default_value_t = Objective::PeakResident)]
    pub objective: Objective,
    /// The table format.
    #[arg(long, value_parser = super::choice::choice::<Format>(), default_value_t = Format::Md)]
    pub format: Format,
    /// Write the table to this file (atomically) instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Draw peak and mean active bytes and mean resident bytes per setting into this file
    /// (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// CPUs for jemalloc's default narenas (4 x CPUs) [default: this machine's].
    #[arg(long, value_parser = super::args::cpus)]
    pub cpus: Option<u32>,
    /// The virtual address bits jemalloc is taken to be built for (its radix tree, part of
    /// the metadata in resident bytes) [default: this machine's, 48 where unknown].
    #[arg(long, value_name = "BITS")]
    pub vaddr_bits: Option<u32>,
    /// Do not check the recommended settings live (their live_check says not-run).
    #[arg(long)]
    pub no_live: bool,
    /// Compare the live check with the model every K events (and after the last) [default:
    /// spaced as `replay --live` spaces them: every event up to 10,000, then about 10,000
    /// comparisons, at most every 100 events].
    #[arg(long, value_name = "K")]
    pub every: Option<u64>,
    /// The seed of the decay model's random numbers (as `replay --process --seed`).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Instead of the settings: which call sites to route to dedicated arenas (at most K,
    /// default 5), searched greedily among the sites blame charges the most waste to at the
    /// active peak (each step keeps the site that lowers peak active plus mean resident
    /// bytes, relatively, the most), one row per site added; the chosen set is checked live.
    /// The trace needs call sites (`record --stacks`).
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "5")]
    pub routes: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChartKind {
    Svg,
    Png,
}

/// Everything the run needs, checked: nothing is read or written before this exists.
struct Plan {
    trace: PathBuf,
    name: String,
    settings: Vec<Setting>,
    format: Format,
    /// `None`: standard output.
    out: Option<OutputFile>,
    chart: Option<(OutputFile, ChartKind)>,
    cpus: u32,
    vaddr_bits: u32,
    seed: u64,
    live: Option<LivePlan>,
    /// What the defaults row is (the notes say it).
    baseline: String,
}

impl Plan {
    fn new(args: &AdviseArgs) -> Result<Plan> {
        if let Some(bits) = args.vaddr_bits.filter(|b| !(32..=64).contains(b)) {
            bail!("--vaddr-bits {bits}: give 32 to 64 (x86-64: 48, or 57 with five-level paging)");
        }
        if args.every == Some(0) {
            bail!("--every 0: give a positive number of events");
        }
        if args.no_live && args.every.is_some() {
            bail!("--every sets the live check's comparisons: it takes no --no-live");
        }
        let chart_kind = match &args.chart {
            None => None,
            Some(path) => Some(match path.extension().and_then(|e| e.to_str()) {
                Some("svg") => ChartKind::Svg,
                Some("png") => ChartKind::Png,
                _ => bail!(
                    "--chart '{}': give a file ending in .svg or .png",
                    path.display()
                ),
            }),
        };
        let mut inputs: Vec<(&str, &Path)> = vec![("the trace", &args.trace)];
        if let Some(g) = &args.grid {
            inputs.push(("the grid file", g));
        }
        refuse_outputs_over_inputs(
            &inputs,
            &[
                ("--out", args.out.as_deref()),
                ("--chart", args.chart.as_deref()),
            ],
        )?;
        let settings = match &args.grid {
            None => default_grid(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read grid file '{}'", path.display()))?;
                parse_grid(&text).with_context(|| format!("grid file '{}'", path.display()))?
            }
        };
        // The baseline is the allocator the program ran with, where the recording says.
        let recorded = crate::trace::open(&args.trace)?
            .meta
            .and_then(|m| m.allocator)
            .and_then(|text| RecordedAllocator::parse(&text));
        let (settings, baseline) = match recorded
            .as_ref()
            .and_then(|r| rebase(&settings, r, args.cpus.is_none()))
        {
            Some((rebased, about)) => (rebased, about),
            None => (settings, LINKED_BASELINE.to_string()),
        };
        let out = match &args.out {
            Some(p) => Some(OutputFile::create(p).with_context(|| "--out".to_string())?),
            None => None,
        };
        let chart = match (&args.chart, chart_kind) {
            (Some(p), Some(kind)) => Some((
                OutputFile::create(p).with_context(|| "--chart".to_string())?,
                kind,
            )),
            _ => None,
        };
        let live = if args.no_live {
            None
        } else {
            let exe = std::env::current_exe().context("the fragsim executable")?;
            Some(LivePlan {
                builds: crate::advise::builds_beside(&exe),
                exe,
                every: args.every,
                debian_jemalloc: PathBuf::from(crate::validate::DEBIAN_JEMALLOC),
                progress: super::progress::later_bar("advise: live check"),
            })
        };
        Ok(Plan {
            trace: args.trace.clone(),
            name: args
                .trace
                .file_stem()
                .map_or("trace".into(), |s| s.to_string_lossy().to_string()),
            settings,
            format: args.format,
            out,
            chart,
            cpus: args.cpus.unwrap_or_else(machine_cpus),
            vaddr_bits: args
                .vaddr_bits
                .unwrap_or_else(|| machine_vaddr_bits().unwrap_or(48)),
            seed: args.seed,
            live,
            baseline,
        })
    }
}

pub fn run(args: AdviseArgs) -> Result<i32> {
    if let Some(k) = args.routes {
        return super::route::advise_routes(&args, k);
    }
    let plan = Plan::new(&args)?;
    // The decay clock as `replay --process` reads it (this machine's coarse clock).
    let clock = DecayClock {
        seed: plan.seed,
        resolution_ns: machine_coarse_clock_ns(),
        start_ns: 0,
    };
    // The models stream the trace, and so does the live check (the model beside the child,
    // which reads the file itself): memory follows the live objects, never the events.
    let trace = TraceSource::File(&plan.trace);
    let machine = ModelMachine {
        cpus: plan.cpus,
        clock,
        vaddr_bits: plan.vaddr_bits,
    };
    let progress = super::progress::later_bar("advise: models");
    progress.start("events", trace.calls()?);
    let advice = advise_stream(trace, &plan.settings, machine, &progress)
        .map_err(super::trace::stream_error)?
        .ranked_by(args.objective);
    progress.finish();
    let live = verify_recommended(trace, &advice, plan.live.as_ref())?;
    let title = format!(
        "advise {}: {} settings ranked by {} bytes (process model)",
        plan.name,
        advice.results.len(),
        advice.objective.words()
    );
    let table = advice_table(&advice, &title, &live);
    let lines = notes(&advice, &live, &plan.baseline);
    let mut text = plan.format.render(&table)?;
    if plan.format == Format::Md {
        // Markdown carries its notes; CSV and JSON stay machine-readable (notes on stderr).
        text.push('\n');
        for l in &lines {
            text.push_str(&format!("- {l}\n"));
        }
    } else {
        for l in &lines {
            super::output::print_error(l);
        }
    }
    if let Some((mut file, kind)) = plan.chart {
        let chart = advice_chart(
            &advice,
            "advise",
            &format!("{}: active and resident bytes per setting", plan.name),
        );
        let bytes = match kind {
            ChartKind::Svg => render_svg(&chart)?.into_bytes(),
            ChartKind::Png => render_png(&chart)?,
        };
        file.write_all(&bytes)
            .with_context(|| format!("--chart '{}'", file.path().display()))?;
        file.commit()?;
    }
    match plan.out {
        Some(mut file) => {
            file.write_all(text.as_bytes())
                .with_context(|| format!("--out '{}'", file.path().display()))?;
            file.commit()?;
        }
        None => super::output::print_text(&text)?,
    }
    if live.iter().any(LiveCheck::failed) {
        return Ok(1);
    }
    Ok(0)
}
