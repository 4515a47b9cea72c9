//! `fragsim container NAME`: one container grown to N, step by step, and its exact trace.

use super::trace::{create_trace, finish_trace};
use super::{AllocatorArgs, OutputArgs};
use crate::containers::tables::growth_table;
use crate::containers::{grow, ContainerKind, ContainerSpec, ElementType, KeyOrder};
use crate::export::OutputFile;
use crate::trace::Event;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Key insertion order (only a B-tree's shape depends on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OrderArg {
    Ascending,
    Random,
}

/// Element types and order, shared with `containers`.
#[derive(Args, Debug, Clone)]
pub(crate) struct ElementArgs {
    /// The key (for sets, vec and vecdeque: the element): SIZE[:ALIGN]; the alignment
    /// defaults to the largest power of two dividing SIZE, up to 8 (20:1 is a 20-byte char
    /// array, 16:16 a u128).
    #[arg(long)]
    pub key: String,
    /// The mapped type of a map, SIZE[:ALIGN]; folly containers without it are the sets.
    #[arg(long)]
    pub value: Option<String>,
    /// Keys inserted in ascending order, or shuffled (with --seed).
    #[arg(
        long = "key-order",
        alias = "order",
        value_enum,
        default_value = "ascending"
    )]
    pub order: OrderArg,
    /// Seed of the shuffle for --key-order random.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl ElementArgs {
    pub fn key(&self) -> Result<ElementType> {
        ElementType::parse(&self.key).with_context(|| format!("--key {}", self.key))
    }

    pub fn value(&self) -> Result<Option<ElementType>> {
        self.value
            .as_deref()
            .map(|v| ElementType::parse(v).with_context(|| format!("--value {v}")))
            .transpose()
    }

    pub fn order(&self) -> KeyOrder {
        match self.order {
            OrderArg::Ascending => KeyOrder::Ascending,
            OrderArg::Random => KeyOrder::Random(self.seed),
        }
    }
}

#[derive(Args, Debug)]
#[command(after_help = container_names_help())]
pub(crate) struct ContainerArgs {
    /// The container (names below).
    name: String,
    #[command(flatten)]
    elements: ElementArgs,
    /// Elements to insert.
    #[arg(long, allow_negative_numbers = true)]
    count: u64,
    /// Write the exact allocation trace (growth to N, then destruction) to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Write the same trace in the text form (`a ID SIZE [ALIGN]`, `f ID`, `r ID SIZE`).
    #[arg(long)]
    trace_text: Option<PathBuf>,
    #[command(flatten)]
    allocator: AllocatorArgs,
    #[command(flatten)]
    output: OutputArgs,
}

fn container_names_help() -> String {
    let mut text = String::from("Containers:\n");
    for kind in ContainerKind::ALL {
        text.push_str(&format!("  {:<24}{}\n", kind.name(), kind.describe()));
    }
    text
}

/// Bytes of trace a growth to `count` can write at most, generously: a node container makes
/// two calls per element, and an event is at most a few varints.
fn trace_bytes_bound(count: u64) -> u64 {
    (2 * count + 4096) * 16
}

/// Refuses a trace that would not fit the disk holding `path`.
fn check_room(path: &Path, count: u64) -> Result<()> {
    // A device or FIFO is written through a temporary file in the system's temporary folder.
    let through_temp = std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
    let dir = match path.parent() {
        _ if through_temp => std::env::temp_dir(),
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let free =
        free_bytes(&dir).with_context(|| format!("cannot write a trace into {}", dir.display()))?;
    let need = trace_bytes_bound(count);
    if need > free {
        bail!(
            "a trace of {count} elements needs up to {need} bytes but {} has {free} free",
            dir.display()
        );
    }
    Ok(())
}

fn free_bytes(dir: &Path) -> Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `stat` a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(stat.f_bavail as u64 * stat.f_frsize as u64)
}

/// Everything refused before the growth: the count, outputs over each other, a disk too
/// small for the traces.
fn check_before_growing(args: &ContainerArgs, kind: ContainerKind) -> Result<()> {
    if args.count == 0 || args.count > kind.max_count() {
        bail!(
            "--count {} must be between 1 and {} for {}",
            args.count,
            kind.max_count(),
            kind.name()
        );
    }
    super::args::refuse_outputs_over_inputs(
        &[],
        &[
            ("--trace", args.trace.as_deref()),
            ("--trace-text", args.trace_text.as_deref()),
            ("--out", args.output.out.as_deref()),
        ],
    )?;
    for path in args.trace.iter().chain(&args.trace_text) {
        check_room(path, args.count)?;
    }
    Ok(())
}

pub fn run(args: ContainerArgs) -> Result<i32> {
    let kind = ContainerKind::from_name(&args.name)?;
    let classes = args.allocator.classes()?;
    let spec = ContainerSpec::new(
        kind,
        args.elements.key()?,
        args.elements.value()?,
        args.elements.order(),
    )?;
    check_before_growing(&args, kind)?;
    let mut writer = match &args.trace {
        Some(path) => {
            Some(create_trace(path).with_context(|| format!("--trace {}", path.display()))?)
        }
        None => None,
    };
    let mut text = match &args.trace_text {
        Some(path) => Some(std::io::BufWriter::new(
            OutputFile::create(path).with_context(|| format!("--trace-text {}", path.display()))?,
        )),
        None => None,
    };
    let mut failure: Option<anyhow::Error> = None;
    let growth = grow(&spec, args.count, &classes, &[], &mut |e: Event| {
        if failure.is_some() {
            return;
        }
        if let Some(w) = writer.as_mut() {
            if let Err(err) = w.write(&e) {
                failure = Some(err.into());
            }
        }
        if let Some(file) = text.as_mut() {
            if let Err(err) = writeln!(file, "{}", crate::trace::event_line(&e)) {
                failure = Some(err.into());
            }
        }
    })?;
    if let Some(err) = failure {
        return Err(err.context("writing the trace"));
    }
    if let Some(w) = writer {
        finish_trace(w).context("writing the trace")?;
    }
    if let Some(file) = text {
        let file = file
            .into_inner()
            .map_err(|e| e.into_error())
            .context("writing the text trace")?;
        file.commit()?;
    }
    let element = spec.element();
    let title = format!(
        "{} of {} ({}), {} elements, {}",
        kind.name(),
        element,
        match spec.value {
            Some(v) => format!("key {} value {}", spec.key, v),
            None => format!("element {}", spec.key),
        },
        args.count,
        crate::sizeclass::build_title(classes.config())
    );
    args.output.emit(&growth_table(title, &growth))?;
    Ok(0)
}
