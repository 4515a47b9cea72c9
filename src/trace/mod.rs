//! Allocation traces: what a program asked of its allocator, as events on abstract objects.
//!
//! Ids are small integers, recycled after a free (lowest free id first), so a replayer keeps
//! per-object state in a vector sized by the peak number of live objects.
//!
//! # Files
//! A trace file is a fixed 88-byte header (magic `FSIMTRC\0`, version, then the counts of
//! [`TraceHeader`]) followed by the events as varints (see `format.rs` for the byte layout).
//! The counts are known only after the last event: [`TraceWriter`] writes a placeholder header
//! (`events = u64::MAX`, read back as "unfinished"), and `finish` seeks back to fill it in;
//! [`TraceWriter::create`] writes a temporary file beside the target and renames it into
//! place, so a failed or abandoned write leaves nothing. Reading and writing stream in constant
//! memory plus one live-object table (a bitset in the reader, a size per id in the writer).
//!
//! # Consistency
//! Every stream this module yields is consistent, checked as it goes: no alloc of a live id, no
//! free or realloc of a dead id, ids below the header's `id_limit` (the writer and the text
//! reader allow a new id at most one past the highest used, so the table stays dense). A
//! consumer may therefore index a `Vec` of `id_limit` slots by id without checks of its own.
//! For imported and recorded traces `id_limit == peak_live_objects`.
//!
//! # Sources
//! [`read_text`] / [`write_text`]: the hand-writable text form. [`import_valgrind`]: the log of
//! `valgrind --trace-malloc=yes`. [`RecordingAllocator`]: a Rust program's own allocations.

mod addr;
mod batch;
mod codec;
mod context;
mod error;
mod flow;
mod format;
mod frame;
mod heaptrack;
mod ids;
mod meta;
mod open;
mod reader;
mod record;
mod slots;
mod stats;
mod tally;
mod text;
mod valgrind;
mod writer;

pub(crate) use addr::AddressImporter;
pub(crate) use addr::EventOut;
pub(crate) use addr::IssueCounts;
pub use batch::Batch;
pub use batch::BetweenRecord;
pub(crate) use context::is_system_module;
pub use context::Call;
pub use context::Control;
pub use context::Frame;
pub use context::Record;
pub(crate) use context::SiteId;
pub(crate) use context::SiteTable;
pub(crate) use context::ThreadId;
pub use context::ALL_ARENAS;
pub use error::TraceError;
pub use flow::Fields;
pub use format::TraceHeader;
pub(crate) use heaptrack::import_heaptrack;
pub(crate) use heaptrack::HeaptrackSummary;
pub use ids::IdPool;
pub(crate) use meta::Ending;
pub(crate) use meta::TraceMeta;
pub(crate) use open::is_binary_trace;
pub use open::open;
pub(crate) use open::open_for_upgrade;
pub use open::read_all;
pub use open::EventStream;
pub use open::OpenedTrace;
pub(crate) use open::RecordStream;
pub use open::TraceKind;
pub use reader::TraceReader;
pub use record::RecordScope;
pub use record::RecordingAllocator;
pub(crate) use slots::{table_of, Slot, SlotIds, SlotTable};
pub use stats::bucket_range;
pub(crate) use stats::histogram_table;
pub use stats::size_bucket;
pub use stats::stats_table;
pub use stats::trace_stats;
pub(crate) use stats::trace_stats_records;
pub use text::event_line;
pub use text::read_text;
pub use text::read_text_records;
pub use text::write_text;
pub use text::write_text_records;
pub use valgrind::import_valgrind;
pub use valgrind::ValgrindOptions;
pub use valgrind::ValgrindSummary;
pub use writer::write_records;
pub use writer::write_trace;
pub use writer::TraceWriter;

use serde::Serialize;

/// The id of one live object in a trace.
pub(crate) type ObjectId = u32;

/// One allocator call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Event {
    /// A new object of `size` bytes; `align` 0 or 1 means the allocator's default alignment.
    Alloc { id: ObjectId, size: u64, align: u64 },
    /// The object is freed; its id may be reused by a later `Alloc`.
    Free { id: ObjectId },
    /// The object is resized to `size` bytes; it keeps its id (and its alignment).
    Realloc { id: ObjectId, size: u64 },
}

impl Event {
    /// The object the event is about.
    pub fn id(&self) -> ObjectId {
        match *self {
            Event::Alloc { id, .. } | Event::Free { id } | Event::Realloc { id, .. } => id,
        }
    }
}
