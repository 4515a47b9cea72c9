//! `fragsim view TRACE -o page.html`: one self-contained page to explore a trace in a
//! browser ([`crate::view`]).

use super::args::refuse_outputs_over_inputs;
use crate::check::saved_band::RecordedBand;
use crate::export::OutputFile;
use crate::process::{machine_cpus, ProcessOptions};
use crate::sizeclass::Preset;
use crate::view::{gather, render, Band, Extra, ViewError, ViewSpec};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub(crate) struct ViewArgs {
    /// The trace (any form `fragsim replay` reads).
    pub trace: PathBuf,
    /// The page to write (one HTML file, everything inside it).
    #[arg(short = 'o', long = "out", value_name = "FILE.html")]
    pub out: PathBuf,
    /// The build to model [default: the recorded program's jemalloc where the trace says,
    /// else the linked 5.3.1].
    #[arg(long, value_parser = super::choice::choice::<Preset>())]
    pub preset: Option<Preset>,
    /// jemalloc's run-time options (`k:v,...`) [default: the recorded program's, else none].
    #[arg(long, value_name = "CONF")]
    pub malloc_conf: Option<String>,
    /// CPUs for jemalloc's default narenas (4 x CPUs) [default: this machine's].
    #[arg(long, value_parser = super::args::cpus)]
    pub cpus: Option<u32>,
    /// Moments the waste flame graph can be drawn at, evenly spaced (the active peak added).
    #[arg(long, default_value_t = 24, value_name = "N")]
    pub moments: usize,
    /// More sections on the page: advise (the built-in grid of run-time options, no live
    /// check), routes (`advise --routes 5 --no-live`: call sites to route to dedicated arenas;
    /// needs a trace with sites), builds (every preset through the one-arena model).
    #[arg(long, value_parser = super::choice::choice::<Extra>(), value_delimiter = ',')]
    pub with: Vec<Extra>,
    /// The real allocator's resident band to draw on the timeline: a file of `replay TRACE
    /// --process --live --honour-clock --runs N --save-band FILE` on this trace. The model then
    /// runs with the band's time scale and decay clock, and its --malloc-conf unless given.
    #[arg(long, value_name = "FILE")]
    pub band: Option<PathBuf>,
}

/// The build and options as `replay --process` takes them: as asked, else the recorded
/// program's (with --malloc-conf over its options), else the linked build's.
fn spec(args: &ViewArgs) -> Result<ViewSpec> {
    if !(1..=200).contains(&args.moments) {
        bail!("--moments {}: give 1 to 200", args.moments);
    }
    let band = match &args.band {
        Some(path) => Some(read_band(path, &args.trace, args.malloc_conf.as_deref())?),
        None => None,
    };
    // Like with like: the band's decay options unless others are asked for.
    let malloc_conf = match (&args.malloc_conf, &band) {
        (Some(conf), _) => conf.as_str(),
        (None, Some(b)) => b.malloc_conf.as_str(),
        (None, None) => "",
    };
    let crate::process::ModelSetup {
        config,
        options,
        note: mut about,
        recorded,
    } = super::process::setup_for(
        &args.trace,
        args.preset.map(Preset::config),
        malloc_conf,
        &ProcessOptions::parse(malloc_conf)?,
        args.cpus.is_some(),
    )?;
    if let Some(b) = &band {
        about.push_str(&format!(
            " · on the band's clock: times x{}, decay seed {}{}",
            b.time_scale,
            b.seed,
            match &args.malloc_conf {
                Some(_) => String::new(),
                None => format!(", its malloc_conf {}", b.malloc_conf),
            }
        ));
    }
    Ok(ViewSpec {
        config,
        options,
        cpus: args.cpus.unwrap_or_else(machine_cpus),
        moments: args.moments,
        about,
        with: args.with.clone(),
        band,
        recorded: recorded.map(|r| (r, args.cpus.is_none())),
    })
}

/// A band file, read and parsed: the resident band and how it was measured, and the model
/// against it as `fragsim report` compares them (`malloc_conf`: the options to model, the
/// band's unless given), on `trace`, the page's.
fn read_band(path: &Path, trace: &Path, malloc_conf: Option<&str>) -> Result<Band> {
    let at = || format!("--band '{}'", path.display());
    let text = std::fs::read_to_string(path).with_context(at)?;
    let r = RecordedBand::parse(&text).with_context(at)?;
    let h = &r.header;
    let mut band = Band {
        model: Vec::new(),
        model_mean_error: 0.0,
        runs: r.band.runs.len(),
        trace: h.trace.clone(),
        malloc_conf: h.malloc_conf.clone(),
        time_scale: h.time_scale,
        seed: h.seed,
        clock_resolution_ns: h.clock_resolution_ns,
        config: r.band.config,
        points: r
            .band
            .points
            .iter()
            .map(|p| (p.event, p.resident.min, p.resident.max))
            .collect(),
    };
    band_model(&mut band, &r, trace, malloc_conf).with_context(at)?;
    Ok(band)
}

/// The model's mean resident at the band's checkpoints, each run from its live run's
/// start-up (`live::decay_compare::compare_with_band`, as the report's decay section), and
/// its mean error, into `band`; nothing where the band's clock cannot be modelled apart
/// (background threads, 5.3.1's clock-driven GC) or the trace is not the band's (the page
/// refuses it, naming both).
fn band_model(
    band: &mut Band,
    r: &RecordedBand,
    trace: &Path,
    malloc_conf: Option<&str>,
) -> Result<()> {
    use crate::trace::Record;
    let h = &r.header;
    let options = ProcessOptions::parse(malloc_conf.unwrap_or(&h.malloc_conf))?;
    if crate::check::decay_compare::replayed_clock_for(r.band.config.version, &options) {
        return Ok(());
    }
    let records: Vec<Record> =
        crate::process::replay_records(crate::trace::open(trace)?.records(), h.time_scale)
            .collect::<Result<_, _>>()?;
    let events = records
        .iter()
        .filter(|r| matches!(r, Record::Call(_) | Record::ThreadExit { .. }))
        .count() as u64;
    if band.check(events).is_err() {
        return Ok(());
    }
    let c = crate::check::decay_compare::compare_with_band(
        &r.band,
        &records,
        &options,
        h.seed,
        h.clock_resolution_ns,
    )?;
    band.model = c
        .checkpoints
        .iter()
        .map(|p| (p.event, p.model_resident))
        .collect();
    band.model_mean_error = c.resident().mean_error;
    Ok(())
}

pub fn run(args: ViewArgs) -> Result<i32> {
    let mut inputs = vec![("the trace", args.trace.as_path())];
    inputs.extend(args.band.as_deref().map(|b| ("--band", b)));
    refuse_outputs_over_inputs(&inputs, &[("--out", Some(&args.out))])?;
    let spec = spec(&args)?;
    let mut out = OutputFile::create(&args.out).context("--out")?;
    let page = gather(&args.trace, &spec).map_err(|e| match (&e, &args.band) {
        (ViewError::Band(_), Some(path)) => {
            anyhow::Error::new(e).context(format!("--band '{}'", path.display()))
        }
        _ => e.into(),
    })?;
    let html = render(&page)?;
    out.write_all(html.as_bytes())
        .with_context(|| format!("--out '{}'", out.path().display()))?;
    out.commit()?;
    super::output::print_error(&format!(
        "wrote '{}' ({} bytes: {} moments, {} timeline points)",
        args.out.display(),
        html.len(),
        page.moments.len(),
        page.timeline.len()
    ));
    Ok(0)
}
