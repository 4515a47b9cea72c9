//! An exact event-by-event model of one jemalloc arena: bins and slabs, the page allocator
//! that places slabs and large extents, and the statistics jemalloc itself reports.
//!
//! Exact under the conditions of the design note (`shared/design/jemalloc-arena.md`): a
//! fresh arena, no thread cache, decay off, one thread. With decay on ([`ArenaModel::set_decay`],
//! `decay`) the arena purges on the clock its caller gives: approximate by nature. Deterministic, and independent of
//! the live allocator (`crate::live` replays the same traces through jemalloc to prove it).

mod arena;
pub(crate) mod arena_replay;
pub(crate) mod compare;
pub(crate) mod decay;
mod memo;
mod pac;
mod ph;
mod smoothstep;
pub(crate) mod workload;

pub use arena::ArenaModel;
pub(crate) use arena::Eagerness;
pub(crate) use arena::ExtentTally;
pub(crate) use arena::ExtentView;
pub(crate) use arena::SlabPlace;
pub(crate) use arena_replay::summary_record;
pub(crate) use arena_replay::ArenaRun;
pub(crate) use arena_replay::ReplaySummary;
pub use compare::compare;
pub use compare::Comparison;
pub use compare::Mismatch;
pub use compare::Snapshot;
pub use decay::Decay;
pub use decay::Ticker;
pub use workload::random_trace;
pub use workload::WorkloadSpec;

use serde::Serialize;

/// Running totals of one arena, up to date after every event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ArenaStats {
    /// Events applied so far.
    pub events: u64,
    pub live_objects: u64,
    /// Bytes the live objects asked for.
    pub requested_bytes: u64,
    /// Usable bytes of the live objects: jemalloc's `small.allocated + large.allocated`.
    pub allocated_bytes: u64,
    /// Bytes of active pages: jemalloc's `pactive` times the page size.
    pub active_bytes: u64,
    /// Virtual memory the arena has mapped (sum of its mappings; retained pages included).
    pub mapped_bytes: u64,
    pub slabs_created: u64,
    pub slabs_released: u64,
    /// Mappings obtained from the system.
    pub mappings: u64,
}

/// One bin's statistics, as `stats.arenas.<i>.bins.<j>.*` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BinStats {
    pub curregs: u64,
    pub curslabs: u64,
    pub nonfull_slabs: u64,
}

/// Why the model cannot apply an event (every variant names the event, counted from 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("event {event}: free of id {id}, which is not live")]
    FreeOfDeadId { event: u64, id: u32 },
    #[error("event {event}: realloc of id {id}, which is not live")]
    ReallocOfUnknownId { event: u64, id: u32 },
    #[error("event {event}: alloc of id {id}, which is already live")]
    AllocOfLiveId { event: u64, id: u32 },
    #[error("event {event}: size {size} is larger than the largest size class")]
    TooLarge { event: u64, size: u64 },
    #[error("event {event}: alignment {align} is not a power of two")]
    BadAlignment { event: u64, align: u64 },
    #[error("event {event}: a large allocation aligned to {align} bytes (above one page) is placed by the address the system returns, which the model does not know")]
    UnmodelledAlignment { event: u64, align: u64 },
    #[error("event {event}: the arena ran out of address space")]
    OutOfAddressSpace { event: u64 },
    #[error("cannot model this build: {0}")]
    Config(String),
}
