//! Allocation traces: what a program asked of its allocator, as events on abstract objects.
//!
//! Ids are small integers, recycled after a free (lowest free id first), so a replayer keeps
//! per-object state in a vector sized by the peak number of live objects.

use serde::Serialize;

/// The id of one live object in a trace.
pub type ObjectId = u32;

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
