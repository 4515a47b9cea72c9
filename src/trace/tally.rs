//! The running counts every writer keeps (and `stats` recomputes): events by kind, live objects
//! and requested bytes, with the consistency rules of a trace.

use super::{Event, ObjectId, TraceHeader};

/// Sizes are kept below 2^63 so that sums of a few of them cannot overflow and `DEAD` is free.
pub(crate) const MAX_SIZE: u64 = (1 << 63) - 1;
const DEAD: u64 = u64::MAX;

#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    /// Size of each live object by id, `DEAD` when the id is free.
    sizes: Vec<u64>,
    pub events: u64,
    pub allocs: u64,
    pub frees: u64,
    pub reallocs: u64,
    pub live: u64,
    pub peak_live: u64,
    pub requested: u128,
    pub peak_requested: u128,
}

impl Tally {
    pub fn new() -> Self {
        Self::default()
    }

    /// One more than the highest id used so far.
    pub fn id_limit(&self) -> u64 {
        self.sizes.len() as u64
    }

    /// The size of a live object.
    pub fn size_of(&self, id: ObjectId) -> Option<u64> {
        self.sizes.get(id as usize).copied().filter(|&s| s != DEAD)
    }

    /// Applies one event, or says why it contradicts the events before it. Inlined, with
    /// the reasons made apart (cold): the writer applies every call of a trace, and the
    /// call and its checks were a tenth of writing one.
    #[inline(always)]
    pub fn apply(&mut self, event: &Event) -> Result<(), String> {
        match *event {
            Event::Alloc { id, size, align } => {
                let slot = id as usize;
                let bad_align = align > 1 && !align.is_power_of_two();
                if size > MAX_SIZE || bad_align || slot > self.sizes.len() {
                    return Err(self.alloc_refused(id, size, align));
                }
                if slot == self.sizes.len() {
                    self.sizes.push(DEAD);
                }
                if self.sizes[slot] != DEAD {
                    return Err(self.alloc_refused(id, size, align));
                }
                self.sizes[slot] = size;
                self.allocs += 1;
                self.live += 1;
                self.peak_live = self.peak_live.max(self.live);
                self.requested += size as u128;
                self.peak_requested = self.peak_requested.max(self.requested);
            }
            Event::Free { id } => {
                let Some(size) = self.size_of(id) else {
                    return Err(not_live("free", id));
                };
                self.sizes[id as usize] = DEAD;
                self.frees += 1;
                self.live -= 1;
                // Less requested: the peak stays.
                self.requested -= size as u128;
            }
            Event::Realloc { id, size } => {
                if size > MAX_SIZE {
                    return Err(absurd(size));
                }
                let Some(old) = self.size_of(id) else {
                    return Err(not_live("realloc", id));
                };
                self.sizes[id as usize] = size;
                self.reallocs += 1;
                self.requested = self.requested - old as u128 + size as u128;
                self.peak_requested = self.peak_requested.max(self.requested);
            }
        }
        self.events += 1;
        Ok(())
    }

    /// Why an alloc is refused, the first of its rules it breaks.
    #[cold]
    #[inline(never)]
    fn alloc_refused(&self, id: ObjectId, size: u64, align: u64) -> String {
        if size > MAX_SIZE {
            return absurd(size);
        }
        if align > 1 && !align.is_power_of_two() {
            return format!("align {align} is not a power of two");
        }
        if id as usize > self.sizes.len() {
            return format!(
                "alloc id {id} is out of range: a new id may be at most one past the highest id used so far ({})",
                self.sizes.len()
            );
        }
        format!("alloc of id {id}, which is already live")
    }

    /// The header these counts make (without `payload_bytes`).
    pub fn header(&self) -> TraceHeader {
        TraceHeader {
            version: super::format::VERSION_CHECKSUMS,
            events: self.events,
            allocs: self.allocs,
            frees: self.frees,
            reallocs: self.reallocs,
            peak_live_objects: self.peak_live,
            id_limit: self.id_limit(),
            peak_requested_bytes: saturate(self.peak_requested),
            final_requested_bytes: saturate(self.requested),
            payload_bytes: 0,
            fields: super::flow::Fields::NONE,
            threads: 1,
            thread_exits: 0,
            sites: 0,
            duration_ns: 0,
        }
    }
}

fn saturate(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

#[cold]
#[inline(never)]
fn absurd(size: u64) -> String {
    format!("size {size} is absurd (above 2^63-1)")
}

#[cold]
#[inline(never)]
fn not_live(what: &str, id: ObjectId) -> String {
    format!("{what} of id {id}, which is not live")
}
