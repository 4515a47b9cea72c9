//! The arena scenario's time side, measured so that page faults can be told apart from the
//! allocator's own work. Every (jemalloc setting, strategy) pair runs in a fresh child process,
//! because jemalloc reads its options once at start-up and because a process's first build pays
//! page faults a later build may not. Each run records its time, its page faults (getrusage)
//! and jemalloc's per-arena statistics; the first run is reported as "cold", the later ones as
//! "warm", never mixed. The seed's own C++ benchmark (`scripts/seed-pmr.sh`) runs beside it.

mod child;
mod cxx;
mod report;
mod sample;
mod stats;
mod summary;

pub use child::{measure_all, run_one, MatrixOptions};
pub use cxx::{parse_cxx_lines, run_cxx, CxxOutput, CxxRun};
pub use report::{
    faults_chart, time_chart, times_markdown, timing_section, TimingRun, RATIO_RANGES_MD,
};
pub use sample::{run_strategy, ArenaPages, ChildReport, JemallocInfo, RunSample};
pub use stats::stats_table;
pub use summary::{cxx_table, ratio_table, summarize, summarize_cxx, timing_table, Summary};

use serde::{Deserialize, Serialize};

/// How the vectors are allocated and released, as a user would write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimedStrategy {
    /// `Vec<Vec<i32>>`: one malloc and one free per inner vector.
    General,
    /// A new `Bump` per build, dropped after it; inner destructors run (today's "arena").
    Arena,
    /// A new `Bump` per build, dropped after it; inner destructors skipped (today's "no-free").
    NoFree,
    /// One `Bump` for all builds, `Bump::reset` between them (keeps its largest chunk);
    /// inner destructors skipped.
    Reused,
    /// A new `Bump::with_capacity(everything)` per build (one chunk, like the seed's
    /// preallocated buffer), dropped after it; inner destructors skipped.
    Presized,
}

impl TimedStrategy {
    pub const ALL: [TimedStrategy; 5] = [
        TimedStrategy::General,
        TimedStrategy::Arena,
        TimedStrategy::NoFree,
        TimedStrategy::Reused,
        TimedStrategy::Presized,
    ];

    /// The name on the command line and in JSON.
    pub fn key(self) -> &'static str {
        match self {
            TimedStrategy::General => "general",
            TimedStrategy::Arena => "arena",
            TimedStrategy::NoFree => "no-free",
            TimedStrategy::Reused => "reused",
            TimedStrategy::Presized => "presized",
        }
    }

    /// What the strategy is, for tables.
    pub fn describe(self) -> &'static str {
        match self {
            TimedStrategy::General => "Vec<Vec<i32>> (malloc/free per vector)",
            TimedStrategy::Arena => "Bump::new per build, dropped, destructors run",
            TimedStrategy::NoFree => "Bump::new per build, dropped, no destructors",
            TimedStrategy::Reused => "one Bump, Bump::reset between builds",
            TimedStrategy::Presized => "Bump::with_capacity per build, dropped",
        }
    }
}

/// jemalloc options that decide where the arena's chunks live and when their pages go back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JemallocSetting {
    /// jemalloc's defaults: dirty pages decay over 10 s, but requests of 8 MiB and more go to
    /// the huge arena, whose decay is 0 (pages purged as soon as they are freed).
    Defaults,
    /// No decay at all: freed pages stay mapped everywhere, the huge arena included.
    DecayOff,
    /// `oversize_threshold:0` turns the huge arena off (src/arena.c `arena_init_huge`: a
    /// threshold below the smallest large class disables it). Big chunks then stay in the
    /// thread's arena, but arena 0 keeps the 8 MiB eager-purge threshold it was created with
    /// (src/extent.c `extent_record` purges freed extents above it at once).
    NoHugeArena,
    /// `oversize_threshold:1073741824`: the huge arena stays, but only for requests of 1 GiB and
    /// more, and arena 0's eager-purge threshold becomes 1 GiB too; every chunk here is smaller.
    #[serde(rename = "oversize-1g")]
    OversizeAboveChunks,
}

impl JemallocSetting {
    pub const ALL: [JemallocSetting; 4] = [
        JemallocSetting::Defaults,
        JemallocSetting::DecayOff,
        JemallocSetting::NoHugeArena,
        JemallocSetting::OversizeAboveChunks,
    ];

    /// The raised threshold of [`JemallocSetting::OversizeAboveChunks`].
    pub(crate) const RAISED_THRESHOLD: u64 = 1 << 30;

    /// The `_RJEM_MALLOC_CONF` the child gets (`None`: the variable is removed).
    pub fn malloc_conf(self) -> Option<&'static str> {
        match self {
            JemallocSetting::Defaults => None,
            JemallocSetting::DecayOff => Some("dirty_decay_ms:-1,muzzy_decay_ms:-1"),
            JemallocSetting::NoHugeArena => Some("oversize_threshold:0"),
            JemallocSetting::OversizeAboveChunks => Some("oversize_threshold:1073741824"),
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            JemallocSetting::Defaults => "defaults",
            JemallocSetting::DecayOff => "decay-off",
            JemallocSetting::NoHugeArena => "no-huge-arena",
            JemallocSetting::OversizeAboveChunks => "oversize-1g",
        }
    }

    /// Whether the options jemalloc reports match this setting (the variable reached it).
    pub(crate) fn applied(self, info: &JemallocInfo) -> bool {
        match self {
            JemallocSetting::Defaults => info.dirty_decay_ms > 0 && info.oversize_threshold > 0,
            JemallocSetting::DecayOff => info.dirty_decay_ms == -1 && info.muzzy_decay_ms == -1,
            JemallocSetting::NoHugeArena => info.oversize_threshold == 0,
            JemallocSetting::OversizeAboveChunks => {
                info.oversize_threshold == Self::RAISED_THRESHOLD
            }
        }
    }
}

impl crate::choice::Choice for TimedStrategy {
    fn all() -> &'static [Self] {
        &TimedStrategy::ALL
    }

    fn name(self) -> &'static str {
        self.key()
    }

    fn help(self) -> &'static str {
        self.describe()
    }
}

impl crate::choice::Choice for JemallocSetting {
    fn all() -> &'static [Self] {
        &JemallocSetting::ALL
    }

    fn name(self) -> &'static str {
        self.key()
    }

    fn help(self) -> &'static str {
        match self {
            JemallocSetting::Defaults => "jemalloc's defaults (huge arena for 8 MiB and more)",
            JemallocSetting::DecayOff => "no decay: freed pages stay mapped",
            JemallocSetting::NoHugeArena => "oversize_threshold:0: no huge arena",
            JemallocSetting::OversizeAboveChunks => {
                "oversize_threshold:1073741824: huge arena only from 1 GiB"
            }
        }
    }
}

impl std::fmt::Display for JemallocSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

impl std::fmt::Display for TimedStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// The environment variable tikv-jemallocator's (prefixed) jemalloc reads its options from.
pub(crate) const MALLOC_CONF_ENV: &str = "_RJEM_MALLOC_CONF";

/// Errors of the timing runs.
#[derive(Debug, thiserror::Error)]
pub enum TimingError {
    #[error("bad run count {0}: need 2 to 1000 (one cold run and at least one warm run)")]
    BadRuns(usize),
    #[error("bad workload {vectors} vectors x {elements} elements: both must be 1 to 100000000")]
    BadWorkload { vectors: u64, elements: u64 },
    #[error("child '{what}' failed: {message}")]
    ChildFailed { what: String, message: String },
    #[error("child '{what}' printed no usable result: {message}")]
    BadChildOutput { what: String, message: String },
    #[error("jemalloc in child '{what}' did not take the setting '{conf}'")]
    SettingNotApplied { what: String, conf: String },
    #[error("seed C++ script '{script}': {message}")]
    Cxx { script: String, message: String },
}

/// What one child does: `runs` builds (the first cold, the rest warm) of `vectors` vectors
/// of `elements` elements each, and their resets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workload {
    pub vectors: u64,
    pub elements: u64,
    pub runs: usize,
}

impl Workload {
    /// Checks the run count and workload the way every entry point needs them.
    pub fn validate(&self) -> Result<(), TimingError> {
        let Workload {
            vectors,
            elements,
            runs,
        } = *self;
        if !(2..=1000).contains(&runs) {
            return Err(TimingError::BadRuns(runs));
        }
        let ok = |n: u64| (1..=100_000_000).contains(&n);
        if !ok(vectors)
            || !ok(elements)
            || vectors.checked_mul(elements).is_none_or(|t| t > 1 << 36)
        {
            return Err(TimingError::BadWorkload { vectors, elements });
        }
        Ok(())
    }
}
