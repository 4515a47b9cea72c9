//! Other allocators, measured live on a trace: glibc, Debian's jemalloc 5.3.0, tcmalloc,
//! mimalloc, and the linked jemalloc 5.3.1. Each replays the trace in its own child process
//! (one replay thread per trace thread, in the trace's order), loaded with `LD_PRELOAD` (the linked one is called directly), and
//! samples its resident memory over its own tables every K events, with the allocator's own
//! figures where it exports them. Measured, not modelled: the model of jemalloc's active
//! bytes is computed beside the measurements for comparison.
//!
//! [`measure`] runs it (the parent side); `child::replay` is the child's side.

pub(crate) mod child;
mod events;
mod probe;
mod run;
mod tables;

pub use run::measure;
pub use run::measure_records;
pub(crate) use run::measure_stream;
pub(crate) use run::AllocatorRun;
pub use run::MeasureOptions;
pub use run::Measurement;
pub use run::Missing;
pub(crate) use tables::caveats;
pub(crate) use tables::chart;
pub use tables::notes;
pub use tables::summary_table;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// An allocator the measurement can load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Allocator {
    /// glibc's malloc, as the system has it.
    Glibc,
    /// Debian's `libjemalloc2` (jemalloc 5.3.0 on bookworm), preloaded.
    Jemalloc,
    /// gperftools' tcmalloc, `libtcmalloc-minimal4`, preloaded.
    Tcmalloc,
    /// mimalloc 2.0, `libmimalloc2.0`, preloaded.
    Mimalloc,
    /// The jemalloc 5.3.1 fragsim is linked with (tikv-jemalloc-sys), called directly.
    Jemalloc531,
}

impl Allocator {
    pub const ALL: [Allocator; 5] = [
        Allocator::Glibc,
        Allocator::Jemalloc,
        Allocator::Tcmalloc,
        Allocator::Mimalloc,
        Allocator::Jemalloc531,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Allocator::Glibc => "glibc",
            Allocator::Jemalloc => "jemalloc",
            Allocator::Tcmalloc => "tcmalloc",
            Allocator::Mimalloc => "mimalloc",
            Allocator::Jemalloc531 => "jemalloc-5.3.1",
        }
    }

    /// The shared library to preload, by file name (`None`: nothing to preload).
    pub fn library_name(self) -> Option<&'static str> {
        match self {
            Allocator::Jemalloc => Some("libjemalloc.so.2"),
            Allocator::Tcmalloc => Some("libtcmalloc_minimal.so.4"),
            Allocator::Mimalloc => Some("libmimalloc.so.2"),
            Allocator::Glibc | Allocator::Jemalloc531 => None,
        }
    }

    /// The Debian package that ships the library.
    pub fn debian_package(self) -> Option<&'static str> {
        match self {
            Allocator::Jemalloc => Some("libjemalloc2"),
            Allocator::Tcmalloc => Some("libtcmalloc-minimal4"),
            Allocator::Mimalloc => Some("libmimalloc2.0"),
            Allocator::Glibc | Allocator::Jemalloc531 => None,
        }
    }

    /// The library on this machine: the first of the usual library folders holding it.
    pub fn find_library(self) -> Option<PathBuf> {
        let name = self.library_name()?;
        let arch = format!("/usr/lib/{}-linux-gnu", std::env::consts::ARCH);
        [arch.as_str(), "/usr/lib64", "/usr/lib", "/usr/local/lib"]
            .iter()
            .map(|dir| PathBuf::from(dir).join(name))
            .find(|p| p.is_file())
    }
}

impl std::fmt::Display for Allocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Allocator {
    type Err = MeasureError;

    fn from_str(s: &str) -> Result<Self, MeasureError> {
        Allocator::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| MeasureError::UnknownAllocator(s.to_string()))
    }
}

/// The library a child measured, as it reports it and as a run shows it (flattened into
/// both, so their JSON keeps these as plain fields).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Library {
    /// The shared object `malloc` resolved to (or the linked one).
    pub library: String,
    pub version: Option<String>,
    /// Bytes of the child's own mmap'd tables (inside the baseline).
    pub tables_bytes: u64,
    /// Where the in-use and held figures come from (`None`: the library does not keep it).
    pub in_use_source: Option<String>,
    pub held_source: Option<String>,
}

/// What a child reports back (one JSON line on its standard output).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChildReport {
    pub allocator: String,
    #[serde(flatten)]
    pub library: Library,
    /// Time spent applying events (sampling excluded), in nanoseconds.
    pub replay_ns: u64,
    /// Replay threads (one per trace thread).
    pub threads: u64,
    /// Under jemalloc: its build, as JSON (`crate::check::arena_replay::parse_config` reads it).
    pub jemalloc_config: Option<String>,
    /// Under jemalloc: large bytes start-up left live in arena 0 before the baseline.
    pub jemalloc_arena0_large: Option<u64>,
    /// (event, anonymous resident bytes, allocator in-use bytes, allocator held bytes,
    /// jemalloc's `stats.active`), absolute; the first is the baseline at event 0.
    #[allow(clippy::type_complexity)]
    pub samples: Vec<(u64, u64, Option<u64>, Option<u64>, Option<u64>)>,
}

/// Why a measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error(
        "unknown allocator '{0}' (known: glibc, jemalloc, tcmalloc, mimalloc, jemalloc-5.3.1)"
    )]
    UnknownAllocator(String),
    #[error("--every 0: give a positive number of events")]
    ZeroEvery,
    #[error("'{0}' is listed twice")]
    Duplicate(String),
    #[error("the trace: {0}")]
    Trace(#[from] crate::sim::SimError),
    #[error("the trace: {0}")]
    Process(#[from] crate::process::ProcessError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("measuring child: {0}")]
    ChildInput(String),
    #[error("{allocator}: {message}")]
    Child { allocator: String, message: String },
}

impl MeasureError {
    pub(crate) fn io(what: &str, source: std::io::Error) -> Self {
        MeasureError::Io {
            what: what.to_string(),
            source,
        }
    }

    pub(crate) fn child_input(what: &str) -> Self {
        MeasureError::ChildInput(what.to_string())
    }
}
