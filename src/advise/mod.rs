//! What should I set? One trace replayed once through the process model
//! ([`crate::process::Process`]) under a grid of run-time options and builds, every setting a
//! consumer of the same pass ([`crate::engine`], in parallel), ranked by one objective
//! (`Objective`: peak resident bytes unless asked otherwise), every figure's change against
//! the defaults shown, the recommended settings checked live (`verify`).
//!
//! Exact conditions: the process model is exact where jemalloc is deterministic (decay off
//! or 0; 5.3.0, or 5.3.1 with `experimental_tcache_gc:false`). 5.3.1's default cache GC runs
//! on a 10 ms wall clock, so every 5.3.1 setting here runs with `experimental_tcache_gc:false`
//! added, in the model and in the live check alike: [`Setting::exact_conf`] is the full
//! string. A grid line asking for the clock GC (`experimental_tcache_gc:true`) runs it as the
//! process model does (`process/model/gc.rs`, on the trace's clock): approximate like decay
//! on the clock ([`Setting::on_clock`]), skipped when the trace has no times.
//!
//! Decay: a setting that names neither `dirty_decay_ms` nor `muzzy_decay_ms` runs with decay
//! off (-1, the exact conditions; its dirty pages are never purged). One that names either
//! runs the other at jemalloc's own default (`dirty_decay_ms:10000`, `muzzy_decay_ms:0`), as
//! jemalloc would take that `MALLOC_CONF`; above 0 ms it runs on the trace's clock
//! ([`Setting::on_clock`]: approximate, as jemalloc's own decay is on the wall clock; skipped
//! when the trace has no times), at 0 it purges at once and stays exact. A setting naming
//! `background_thread` takes jemalloc's decay defaults the same way (background threads
//! purge only what decay lets go), and its threads run on the trace's clock too.

pub(crate) mod grid;
mod objective;
mod run;
mod setting_run;
mod table;
pub(crate) mod verify;

pub use grid::default_grid;
pub(crate) use grid::parse_grid;
pub(crate) use grid::rebase;
pub(crate) use objective::Objective;
pub use run::advise;
pub(crate) use run::advise_on_clock;
pub(crate) use run::advise_stream;
pub(crate) use run::Advice;
pub(crate) use run::AdviseError;
pub(crate) use run::ModelMachine;
pub(crate) use run::SettingResult;
pub(crate) use table::advice_chart;
pub(crate) use table::advice_table;
pub use table::notes;
pub(crate) use table::LIMITS;
pub(crate) use table::LINKED_BASELINE;
pub(crate) use verify::builds_beside;
pub(crate) use verify::verify_recommended;
pub use verify::LiveCheck;
pub(crate) use verify::LivePlan;

use crate::process::{OptionError, ProcessOptions};
use crate::sizeclass::{AllocatorConfig, JemallocVersion, Preset};

/// jemalloc's own decay defaults (`opt_dirty_decay_ms`, `opt_muzzy_decay_ms` in 5.3's
/// `arena.c`): dirty pages purged over 10 s, muzzy pages at once.
pub(crate) const JEMALLOC_DECAY: &str = "dirty_decay_ms:10000,muzzy_decay_ms:0";

/// One point of the grid: a `MALLOC_CONF` as jemalloc takes it, the build it runs on, and the
/// options the model runs with (the string parsed, plus what the exact conditions add).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Setting {
    /// As given (empty: the defaults).
    pub malloc_conf: String,
    #[serde(skip)]
    pub preset: Preset,
    pub options: ProcessOptions,
}

/// Why a setting cannot be modelled exactly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error(transparent)]
    Option(#[from] OptionError),
    #[error("experimental_tcache_gc is a 5.3.1 option; jemalloc 5.3.0 does not know it")]
    NotIn530,
}

impl Setting {
    /// `malloc_conf` on `preset`; 5.3.1 settings get `experimental_tcache_gc:false` unless
    /// they ask for `true`; one that names a decay option gets jemalloc's default for the
    /// other (module docs).
    pub fn new(malloc_conf: &str, preset: Preset) -> Result<Setting, SettingError> {
        let names_decay = malloc_conf.split(',').any(|pair| {
            matches!(
                pair.split(':').next().map(str::trim),
                Some("dirty_decay_ms" | "muzzy_decay_ms" | "background_thread")
            )
        });
        let mut options = if names_decay {
            // Later pairs override earlier ones: what the line gives wins.
            ProcessOptions::parse(&format!("{JEMALLOC_DECAY},{malloc_conf}"))?
        } else {
            ProcessOptions::parse(malloc_conf)?
        };
        match preset.config().version {
            JemallocVersion::V5_3_1 => {
                // Asked for, the clock GC runs on the trace's clock ([`Setting::clock_gc`]).
                options.experimental_tcache_gc.get_or_insert(false);
            }
            JemallocVersion::V5_3_0 => {
                if options.experimental_tcache_gc.is_some() {
                    return Err(SettingError::NotIn530);
                }
            }
        }
        Ok(Setting {
            malloc_conf: malloc_conf.trim().to_string(),
            preset,
            options,
        })
    }

    /// Decay (either setting above 0 ms) or 5.3.1's cache GC runs on the trace's clock:
    /// approximate, and only on a trace with times.
    pub fn on_clock(&self) -> bool {
        self.options.needs_clock() || self.clock_gc()
    }

    /// 5.3.1's clock-driven cache GC, asked for with `experimental_tcache_gc:true`.
    pub(crate) fn clock_gc(&self) -> bool {
        self.config().version == JemallocVersion::V5_3_1
            && self.options.experimental_tcache_gc == Some(true)
    }

    /// Why the setting needs the trace's clock (for a trace without times).
    pub(crate) fn clock_reason(&self) -> &'static str {
        match self.clock_gc() {
            true => "experimental_tcache_gc:true's cache GC runs on a 10 ms clock",
            false => "decay above 0 ms runs on the trace's clock",
        }
    }

    /// Decay is on (0 included: purge at once, still exact).
    pub fn decays(&self) -> bool {
        self.options.dirty_decay_ms != -1 || self.options.muzzy_decay_ms != -1
    }

    /// The linked jemalloc (5.3.1) with an empty `MALLOC_CONF`: the baseline (decay off, the
    /// exact conditions; `dirty_decay_ms:10000` is jemalloc's own defaults with decay).
    pub fn defaults() -> Setting {
        Setting::new("", Preset::LINKED).expect("the defaults parse")
    }

    pub fn is_defaults(&self) -> bool {
        self.same_as(&Setting::defaults())
    }

    /// The same build and the same options (however written).
    pub(crate) fn same_as(&self, other: &Setting) -> bool {
        self.preset == other.preset && self.options == other.options
    }

    pub fn config(&self) -> AllocatorConfig {
        self.preset.config()
    }

    /// `5.3.1 tcache:false`, `5.3.0 defaults`.
    pub fn label(&self) -> String {
        let conf = if self.malloc_conf.is_empty() {
            "defaults"
        } else {
            &self.malloc_conf
        };
        format!("{} {conf}", self.preset.name())
    }

    /// The options with `narenas` made explicit for `cpus` (jemalloc's default, 4 x CPUs, as
    /// the live child must run it whatever machine it is on).
    pub(crate) fn options_for(&self, cpus: u32) -> ProcessOptions {
        let mut o = self.options.clone();
        o.narenas = Some(o.narenas_for(cpus));
        o
    }

    /// The whole `MALLOC_CONF` the model's exact conditions mean, as the live check gives it
    /// to jemalloc: the options, `narenas` for `cpus`, both decay settings, and for 5.3.1
    /// `experimental_tcache_gc` (`false` unless asked for).
    pub fn exact_conf(&self, cpus: u32) -> String {
        self.options_for(cpus).to_conf(self.config().version)
    }
}
