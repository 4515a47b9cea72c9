//! `fragsim view TRACE -o page.html`: one self-contained page to explore a trace in a
//! browser ([`crate::view`]).

use super::args::refuse_outputs_over_inputs;
use crate::export::OutputFile;
use crate::process::{machine_cpus, ProcessOptions, RecordedAllocator};
use crate::sizeclass::{JemallocVersion, Preset};
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

/// The build and options: as asked, else the recorded program's, else the linked build's.
fn spec(args: &ViewArgs) -> Result<ViewSpec> {
    if !(1..=200).contains(&args.moments) {
        bail!("--moments {}: give 1 to 200", args.moments);
    }
    let recorded = match (args.preset, &args.malloc_conf) {
        (None, None) => crate::trace::open(&args.trace)?
            .meta
            .and_then(|m| m.allocator)
            .and_then(|text| RecordedAllocator::parse(&text))
            .filter(|r| r.config.is_some()),
        _ => None,
    };
    let (config, conf, about) = match &recorded {
        Some(r) => (
            r.config.expect("kept only with a build"),
            match args.cpus {
                Some(_) => r.malloc_conf_without_narenas(),
                None => r.malloc_conf.clone(),
            },
            format!(
                " (the recorded program's jemalloc, {}; --preset or --malloc-conf to change)",
                r.malloc_conf
            ),
        ),
        None => (
            args.preset.unwrap_or(Preset::LINKED).config(),
            args.malloc_conf.clone().unwrap_or_default(),
            args.malloc_conf
                .as_ref()
                .map_or(String::new(), |c| format!(" with {c}")),
        ),
    };
    let mut options = ProcessOptions::parse(&conf)?;
    if config.version == JemallocVersion::V5_3_1 {
        // The deterministic cache GC unless asked for, as `replay --process`.
        options.experimental_tcache_gc.get_or_insert(false);
    }
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
