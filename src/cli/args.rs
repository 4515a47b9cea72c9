//! Arguments several commands share.

use crate::export::{write_atomic, Format, Table};
use crate::sizeclass::{AllocatorConfig, Preset, SizeClasses};
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

/// Which jemalloc build to model.
#[derive(Args, Debug, Clone, Default)]
pub struct AllocatorArgs {
    /// A named build (`dev` is an alias of `5.3.1`) [default, for every command: the linked
    /// jemalloc, 5.3.1 as tikv-jemalloc-sys ships it]. `fragsim replay` takes a
    /// comma-separated list of them to compare.
    #[arg(long, value_parser = super::choice::choice::<Preset>(), value_delimiter = ',', conflicts_with_all = ["lg_quantum", "lg_page", "lg_ngroup"])]
    pub preset: Vec<Preset>,
    /// log2 of the quantum (default: the linked jemalloc's, 4: 16 bytes).
    #[arg(long)]
    pub lg_quantum: Option<u32>,
    /// log2 of the page size (default: the linked jemalloc's, 12: 4 KiB).
    #[arg(long)]
    pub lg_page: Option<u32>,
    /// log2 of the size classes per doubling (default 2).
    #[arg(long)]
    pub lg_ngroup: Option<u32>,
    /// Model a build configured with --disable-cache-oblivious (no padding page on large
    /// allocations).
    #[arg(long)]
    pub no_cache_oblivious: bool,
    /// Round large requests up to whole pages rather than to a large size class (jemalloc
    /// 5.3.1's default `disable_large_size_classes`).
    #[arg(long)]
    pub large_page_rounding: bool,
}

impl AllocatorArgs {
    pub fn config(&self) -> Result<AllocatorConfig> {
        let mut config = match self.preset.as_slice() {
            [] => linked_config()?,
            [one] => one.config(),
            many => bail!(
                "--preset takes one build here, not {} (only `fragsim replay` compares several)",
                many.len()
            ),
        };
        if let Some(v) = self.lg_quantum {
            config.lg_quantum = v;
        }
        if let Some(v) = self.lg_page {
            config.lg_page = v;
        }
        if let Some(v) = self.lg_ngroup {
            config.lg_ngroup = v;
        }
        config.cache_oblivious &= !self.no_cache_oblivious;
        config.large_page_rounding |= self.large_page_rounding;
        config.validate()?;
        Ok(config)
    }

    /// The chosen build, or `None` when no option was given (use the running jemalloc's).
    pub(crate) fn explicit_config(&self) -> Result<Option<AllocatorConfig>> {
        let given = !self.preset.is_empty()
            || self.lg_quantum.is_some()
            || self.lg_page.is_some()
            || self.lg_ngroup.is_some()
            || self.no_cache_oblivious
            || self.large_page_rounding;
        given.then(|| self.config()).transpose()
    }

    pub fn classes(&self) -> Result<SizeClasses> {
        Ok(SizeClasses::new(self.config()?)?)
    }
}

/// The build of the jemalloc this binary links: every command's default build.
pub(crate) fn linked_config() -> Result<AllocatorConfig> {
    crate::live::Api::linked().config()
}

/// Where and how to write a table.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// The table format.
    #[arg(long, value_parser = super::choice::choice::<Format>(), default_value_t = Format::Md)]
    pub format: Format,
    /// Write to this file (atomically) instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl OutputArgs {
    /// Writes a live comparison's summary (with any fields the caller added), the first
    /// mismatches on stderr too: exit status 1 when it is not exact.
    pub(crate) fn emit_comparison(
        &self,
        record: &crate::export::Summary,
        c: &crate::sim::Comparison,
    ) -> Result<i32> {
        self.emit_summary(record)?;
        if c.is_exact() {
            Ok(0)
        } else {
            for m in &c.first {
                super::output::print_error(&format!("mismatch: {m}"));
            }
            Ok(1)
        }
    }

    /// Writes a summary: named fields (one JSON object, one CSV row), a table of sentences in
    /// Markdown.
    pub(crate) fn emit_summary(&self, record: &crate::export::Summary) -> Result<()> {
        self.emit(&record.table_for(self.format))
    }

    pub fn emit(&self, table: &Table) -> Result<()> {
        let text = self.format.render(table)?;
        match &self.out {
            Some(path) => Ok(write_atomic(path, text.as_bytes())?),
            None => Ok(super::output::print_text(&text)?),
        }
    }
}

/// clap parser for counts that must be at least 1 (runs, vectors...).
pub(crate) fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// clap parser for a file stem used inside an output folder: letters, digits, '-' and '_'
/// (no paths, nothing empty).
pub fn file_stem(text: &str) -> Result<String, String> {
    let ok = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(text.to_string())
    } else {
        Err("use letters, digits, '-' and '_'".into())
    }
}

/// Creates the output folder `dir` (and its `charts/`) before any work, so an impossible
/// `--out` fails at once rather than after a measurement.
pub(crate) fn prepare_folder(dir: &std::path::Path) -> Result<()> {
    crate::export::create_folder(dir)?;
    crate::export::create_folder(&dir.join("charts"))?;
    Ok(())
}

/// A trace written to `out` replaces no file of the user's: an existing non-empty file that
/// is not a fragsim binary trace is refused unless `force` (a device, FIFO or link is written
/// through, never replaced: `export::OutputFile`).
pub(crate) fn refuse_replacing_non_trace(out: &std::path::Path, force: bool) -> anyhow::Result<()> {
    let meta = std::fs::metadata(out);
    if meta.is_ok_and(|m| m.is_file() && m.len() > 0)
        && !crate::trace::is_binary_trace(out)
        && !force
    {
        anyhow::bail!(
            "-o '{}' is an existing file that is not a fragsim trace: writing the trace would destroy it (choose another file, or --force to replace it)",
            out.display()
        );
    }
    Ok(())
}

/// Refuses, before any work, an output that names the same file as an input (same device
/// and inode, or the same real path) or as another output: writing it would destroy the
/// input, or one output would clobber the other. Each path comes with the option naming it.
pub(crate) fn refuse_outputs_over_inputs(
    inputs: &[(&str, &std::path::Path)],
    outputs: &[(&str, Option<&std::path::Path>)],
) -> Result<()> {
    use crate::export::same_file;
    let outputs: Vec<(&str, &std::path::Path)> = outputs
        .iter()
        .filter_map(|(o, p)| Some((*o, (*p)?)))
        .collect();
    for (i, (option, out)) in outputs.iter().enumerate() {
        for (what, input) in inputs {
            if same_file(input, out) {
                bail!(
                    "{option} '{}' is {what} '{}': writing it would destroy it (choose another file)",
                    out.display(),
                    input.display()
                );
            }
        }
        for (other, earlier) in &outputs[..i] {
            if same_file(earlier, out) {
                bail!(
                    "{option} '{}' and {other} '{}' are the same file (choose two files)",
                    out.display(),
                    earlier.display()
                );
            }
        }
    }
    Ok(())
}

/// Whether writing `path` writes this process's standard output: `-`, or the same file
/// (`/dev/stdout`, `/proc/self/fd/1`, the file stdout is redirected to).
pub(crate) fn is_stdout(path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if path == std::path::Path::new("-") {
        return true;
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    // SAFETY: fstat(1) writes into the zeroed struct it is given.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(1, &mut stat) } != 0 {
        return false;
    }
    meta.dev() == stat.st_dev && meta.ino() == stat.st_ino
}

/// `--cpus`: a number within jemalloc's bound (`process::check_cpus`).
/// `--vaddr-bits`: 32 to 64.
pub fn vaddr_bits(s: &str) -> std::result::Result<u32, String> {
    match s.parse::<u32>() {
        Ok(bits) if (32..=64).contains(&bits) => Ok(bits),
        _ => Err("give 32 to 64 (x86-64: 48, or 57 with five-level paging)".to_string()),
    }
}

pub fn cpus(s: &str) -> std::result::Result<u32, String> {
    let n: u32 = s
        .parse()
        .map_err(|_| "not a whole number of CPUs".to_string())?;
    crate::process::check_cpus(n)
}
