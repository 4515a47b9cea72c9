//! `fragsim view TRACE -o page.html`: one self-contained page to explore a trace in a
//! browser ([`crate::view`]).

use super::args::refuse_outputs_over_inputs;
use crate::export::OutputFile;
use crate::process::{machine_cpus, ProcessOptions};
use crate::sizeclass::Preset;
use crate::view::{gather, render, Extra, ViewSpec};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ViewArgs {
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
    /// More tables on the page: advise (the built-in grid of run-time options, no live
    /// check), builds (every preset through the one-arena model).
    #[arg(long, value_parser = super::choice::choice::<Extra>(), value_delimiter = ',')]
    pub with: Vec<Extra>,
}

/// The build and options as `replay --process` takes them: as asked, else the recorded
/// program's (with --malloc-conf over its options), else the linked build's.
fn spec(args: &ViewArgs) -> Result<ViewSpec> {
    if !(1..=200).contains(&args.moments) {
        bail!("--moments {}: give 1 to 200", args.moments);
    }
    let malloc_conf = args.malloc_conf.as_deref().unwrap_or("");
    let (config, options, about, recorded) = super::process::setup_for(
        &args.trace,
        args.preset.map(Preset::config),
        malloc_conf,
        &ProcessOptions::parse(malloc_conf)?,
        args.cpus.is_some(),
    )?;
    Ok(ViewSpec {
        config,
        options,
        cpus: args.cpus.unwrap_or_else(machine_cpus),
        moments: args.moments,
        about,
        with: args.with.clone(),
        recorded: recorded.map(|r| (r, args.cpus.is_none())),
    })
}

pub fn run(args: ViewArgs) -> Result<i32> {
    refuse_outputs_over_inputs(&[("the trace", &args.trace)], &[("--out", Some(&args.out))])?;
    let spec = spec(&args)?;
    let mut out = OutputFile::create(&args.out).context("--out")?;
    let page = gather(&args.trace, &spec)?;
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
