//! `fragsim replay TRACE --blame`: active memory at the peak (or any event) of the process
//! model, charged to call sites (size classes for a trace without sites), with folded stacks
//! and a flame graph of waste.

use super::replay_args::ReplayArgs;
use crate::blame::{
    blame_stream, blame_table_with, folded_lines, waste_profile, At, Blame, BlameSpec,
};
use crate::charts::flame::flame_graph_svg;
use crate::export::profile;
use crate::export::OutputFile;
use crate::process::{machine_cpus, ProcessOptions};
use anyhow::{bail, Context, Result};
use std::io::Write;

/// A blame models one build (the flags that belong to other modes are refused by
/// `replay`'s table of them).
fn refuse_builds(args: &ReplayArgs) -> Result<()> {
    if args.allocator.preset.len() > 1 {
        bail!("--blame models one build, not a --preset list");
    }
    Ok(())
}

pub fn run(args: &ReplayArgs) -> Result<i32> {
    refuse_builds(args)?;
    let flags = &args.blame;
    let at = At::parse(flags.at.as_deref().unwrap_or("peak"))?;
    let top = args.whatif.top.unwrap_or(20);
    if top == 0 {
        bail!("--top 0 shows nothing (give at least 1)");
    }
    if flags.depth == 0 {
        bail!("--depth 0 shows no frame (give at least 1)");
    }
    let options = ProcessOptions::parse(&args.process.malloc_conf)?;
    let (config, options, note) = super::process::model_setup(args, &options)?;
    // Every output is checked writable before the replay.
    let mut folded_out = flags
        .folded
        .as_deref()
        .map(OutputFile::create)
        .transpose()?;
    let mut svg_out = flags
        .flamegraph
        .as_deref()
        .map(OutputFile::create)
        .transpose()?;
    let mut pprof_out = flags.pprof.as_deref().map(OutputFile::create).transpose()?;
    let mut speedscope_out = flags
        .speedscope
        .as_deref()
        .map(OutputFile::create)
        .transpose()?;
    let cpus = args.process.cpus.unwrap_or_else(machine_cpus);
    let spec = BlameSpec {
        config,
        options,
        cpus,
        at,
    };
    // The trace is streamed (read twice, sites included: the blame names them), so memory
    // follows live objects, not the trace's length.
    let b = blame_stream(crate::analysis::TraceSource::File(&args.trace), &spec)
        .map_err(super::trace::stream_error)?;
    let name = args
        .trace
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().to_string());
    let title = title(
        &name,
        at,
        &b,
        &crate::sizeclass::build_title(&config),
        &note,
    );
    let folded = folded_lines(&b);
    if let Some(mut out) = folded_out.take() {
        let text: String = folded.iter().map(|l| format!("{l}\n")).collect();
        out.write_all(text.as_bytes())
            .with_context(|| format!("--folded '{}'", out.path().display()))?;
        out.commit()?;
    }
    if let Some(mut out) = svg_out.take() {
        let short = format!(
            "{name}: waste bytes by stack at event {} ({} active bytes)",
            b.event, b.active_bytes
        );
        let svg = flame_graph_svg(&short, "bytes", &folded)?;
        out.write_all(&svg)
            .with_context(|| format!("--flamegraph '{}'", out.path().display()))?;
        out.commit()?;
    }
    if pprof_out.is_some() || speedscope_out.is_some() {
        let profile = waste_profile(&b, &format!("{name}: bytes by stack at event {}", b.event));
        for (out, bytes, flag) in [
            (pprof_out.take(), profile::pprof(&profile)?, "--pprof"),
            (
                speedscope_out.take(),
                profile::speedscope(&profile)?.into_bytes(),
                "--speedscope",
            ),
        ] {
            if let Some(mut out) = out {
                out.write_all(&bytes)
                    .with_context(|| format!("{flag} '{}'", out.path().display()))?;
                out.commit()?;
            }
        }
    }
    // Markdown reads short stacks; CSV and JSON keep every frame.
    let depth = (args.output.format == crate::export::Format::Md).then_some(flags.depth);
    args.output.emit(&blame_table_with(&b, top, title, depth))?;
    Ok(0)
}

fn title(name: &str, at: At, b: &Blame, build: &str, note: &str) -> String {
    let when = match at {
        At::Peak => "the active peak, ",
        At::End => "the end, ",
        At::Event(_) => "",
    };
    let by = if b.by_class {
        "size class (the trace has no call sites)"
    } else {
        "call site"
    };
    format!(
        "{name}: active memory by {by} at {when}event {} of {}: {}. Process model {build}{note}",
        b.event,
        b.events,
        crate::blame::headline(b)
    )
}
