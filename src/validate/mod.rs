//! `fragsim validate`: every kind of number fragsim predicts, checked against live jemalloc.
//!
//! `checks` compares the class table and `nallocx`, `allocations` allocates F14 layouts
//! for real in private arenas, `text` writes the result as a table and a report. The totals
//! (comparisons, mismatches) are derived from the recorded checks, never counted alongside.

mod allocations;
mod checks;
pub(crate) mod exhaustive;
mod process;
mod tables;
mod text;
pub use exhaustive::exhaustive_check;
pub use exhaustive::Mismatch;
pub use exhaustive::BLOCK;
pub use exhaustive::LISTED_MISMATCHES;

pub(crate) use crate::progress::Progress;
pub(crate) use crate::progress::ProgressObserver;
pub(crate) use allocations::F14Measurement;
pub use process::fuzz_specs;
pub use process::process_specs;
pub use process::process_validation;
pub(crate) use process::process_validation_of;
pub(crate) use process::ProcessCheck;
pub use process::TraceShape;
pub(crate) use tables::process_validation_table;
pub use tables::replay_validation_table;
pub(crate) use text::validation_markdown;
pub(crate) use text::validation_table;

use crate::check::arena_replay::{replay_validation, ReplayCheck};
use crate::experiments::sweep::{SizeRange, SweepSpec};
use crate::live::LiveBuild;
use crate::sizeclass::{AllocatorConfig, SizeClasses};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// What to check.
#[derive(Clone, Debug)]
pub struct ValidateOptions {
    /// The model to check; `None` derives it from the live build's page and quantum.
    pub model: Option<AllocatorConfig>,
    /// Every request up to this is compared with nallocx.
    pub exhaustive_up_to: u64,
    /// Log-uniform requests compared with nallocx up to the largest class.
    pub random_requests: u64,
    /// F14 rows allocated for real.
    pub sweep: SweepSpec,
    /// Instances per row: as many as fit in this many bytes, at least 1 ...
    pub bytes_per_row: u64,
    /// ... and at most this many.
    pub max_instances: u64,
    /// Told how far the long steps are (the command line draws a bar).
    pub progress: Progress,
    /// Random traces replayed through the arena model and the live jemalloc, and generated
    /// threaded traces through the process model and the live baton replay, every event
    /// compared: the fragsim executable that serves the other `disable_large_size_classes`
    /// setting and the baton in child processes. `None` skips both replay checks.
    pub replay_exe: Option<PathBuf>,
    /// Short replay traces (seconds) rather than the long ones.
    pub replay_quick: bool,
    /// A system jemalloc (Debian's 5.3.0) to replay the same traces through as well.
    pub system_jemalloc: Option<PathBuf>,
    /// More generated threaded traces, `(first seed, count)` ([`fuzz_specs`]), through the
    /// process model and the live baton replay beside the fixed ones.
    pub fuzz: Option<(u64, u64)>,
}

/// Debian's jemalloc 5.3.0 (`libjemalloc2`), where installed.
pub(crate) const DEBIAN_JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

impl ValidateOptions {
    /// The default, reduced sweep: value sizes 8..=256:8, tables up to 10,240 values.
    pub fn reduced() -> Self {
        ValidateOptions {
            model: None,
            exhaustive_up_to: 4 << 20,
            random_requests: 4000,
            sweep: SweepSpec {
                sizes: SizeRange::new(8, 256, 8).expect("valid range"),
                max_capacity: 10 << 10,
                value_align: None,
            },
            bytes_per_row: 16 << 20,
            max_instances: 300,
            progress: Progress::default(),
            replay_exe: None,
            replay_quick: true,
            system_jemalloc: Path::new(DEBIAN_JEMALLOC)
                .exists()
                .then(|| PathBuf::from(DEBIAN_JEMALLOC)),
            fuzz: None,
        }
    }

    /// The full physical table (tables up to 10·2^20 values).
    pub fn full() -> Self {
        let mut options = Self::reduced();
        options.sweep.max_capacity = 10 << 20;
        options
    }
}

/// One comparison (or a summary of many), predicted beside measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub check: String,
    pub subject: String,
    pub predicted: String,
    pub measured: String,
    pub ok: bool,
    /// Individual comparisons this row stands for: 1 for a single check, every request for
    /// a summary row, 0 for an example listed beside its summary (counted there).
    pub compared: u64,
    /// How many of those disagreed.
    pub mismatched: u64,
}

impl Check {
    /// A single comparison: ok when the two texts agree.
    fn single(check: &str, subject: String, predicted: String, measured: String) -> Self {
        let ok = predicted == measured;
        Check {
            check: check.into(),
            subject,
            predicted,
            measured,
            ok,
            compared: 1,
            mismatched: u64::from(!ok),
        }
    }
}

/// Everything one validation run found.
#[derive(Clone, Debug)]
pub struct Validation {
    pub live: LiveBuild,
    pub model: AllocatorConfig,
    /// Class-table and nallocx checks (nallocx summarised, its mismatches listed).
    pub checks: Vec<Check>,
    pub f14: Vec<F14Measurement>,
    /// Random traces replayed model vs live (empty when not asked).
    pub replay: Vec<ReplayCheck>,
    /// Generated threaded traces, process model vs live baton replay (empty when not asked).
    pub process: Vec<ProcessCheck>,
}

impl Validation {
    /// Individual comparisons made (every nallocx request counts; three per F14 row).
    pub fn compared(&self) -> u64 {
        let checks: u64 = self.checks.iter().map(|c| c.compared).sum();
        let replay: u64 = self.replay.iter().map(|r| r.comparison.values).sum();
        let process: u64 = self.process.iter().map(|r| r.comparison.values).sum();
        checks + F14Measurement::COMPARISONS * self.f14.len() as u64 + replay + process
    }

    /// Comparisons that disagreed (an F14 row counts once however many of its fields differ).
    pub fn mismatches(&self) -> u64 {
        let checks: u64 = self.checks.iter().map(|c| c.mismatched).sum();
        let replay: u64 = self
            .replay
            .iter()
            .map(|r| r.comparison.mismatched_values)
            .sum();
        let process: u64 = self
            .process
            .iter()
            .map(|r| r.comparison.mismatched_values)
            .sum();
        checks + self.f14.iter().filter(|m| !m.ok()).count() as u64 + replay + process
    }

    pub fn passed(&self) -> bool {
        self.mismatches() == 0
    }

    /// Human-readable descriptions of the first `n` mismatches.
    pub fn first_mismatches(&self, n: usize) -> Vec<String> {
        let checks = self.checks.iter().filter(|c| !c.ok).map(|c| {
            format!(
                "{} {}: predicted {}, measured {}",
                c.check, c.subject, c.predicted, c.measured
            )
        });
        let f14 = self.f14.iter().filter(|m| !m.ok()).map(|m| {
            format!(
                "F14 {} B x {} {}: predicted {} usable / {} active / {} calls, measured {} / {} / {} ({} frees)",
                m.value_size, m.capacity, m.layout, m.predicted_usable, m.predicted_active,
                m.predicted_calls, m.measured_usable, m.measured_active, m.measured_calls,
                m.measured_frees
            )
        });
        let replay = self.replay.iter().flat_map(|r| {
            r.comparison
                .first
                .iter()
                .map(move |m| format!("replay {} seed {}, {m}", r.allocator, r.spec.seed))
        });
        let process = self.process.iter().flat_map(|r| {
            r.comparison
                .first
                .iter()
                .map(move |m| format!("threaded trace {} seed {}, {m}", r.allocator, r.spec.seed))
        });
        checks
            .chain(f14)
            .chain(replay)
            .chain(process)
            .take(n)
            .collect()
    }
}

/// Compares the model with the running jemalloc. Runs serially: the measurements use
/// private arenas, but one at a time keeps the process's footprint small.
pub fn validate(options: &ValidateOptions) -> Result<Validation> {
    let live = LiveBuild::read()?;
    let model = match options.model {
        Some(config) => config,
        None => live.config()?,
    };
    let classes = SizeClasses::new(model)?;
    let mut checks = checks::class_table(&model, &live, &classes);
    checks.extend(checks::nallocx_requests(&classes, options));
    let f14 = allocations::measure_f14(&classes, options)?;
    let replay = match &options.replay_exe {
        Some(exe) => replay_validation(
            exe,
            options.replay_quick,
            options.system_jemalloc.as_deref(),
        )?,
        None => Vec::new(),
    };
    let process = match &options.replay_exe {
        Some(exe) => {
            let mut specs = process_specs();
            if let Some((first, count)) = options.fuzz {
                specs.extend(fuzz_specs(first, count));
            }
            process_validation_of(specs, exe, options.system_jemalloc.as_deref())?
        }
        None => Vec::new(),
    };
    Ok(Validation {
        live,
        model,
        checks,
        f14,
        replay,
        process,
    })
}
