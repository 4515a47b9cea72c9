//! From address-level allocator calls (valgrind logs, in-process recordings) to id events:
//! every live address holds an id, ids handed out lowest-free-first.

use super::ids::FreeIds;
use super::{Event, ObjectId};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hash that keeps neighbouring addresses in neighbouring buckets. Allocators hand out
/// addresses in runs (a heap grows upwards, a program frees its objects in the order it made
/// them), so a table of a million live objects is then walked nearly in order instead of
/// missing the cache on every call (the misses were most of the import's time). hashbrown
/// takes the bucket from the low bits and a 7-bit tag from the top ones: the low bits are
/// the address in 16-byte units plus a random offset per 64 KiB region (so regions, and
/// page-aligned blocks, do not pile onto the same buckets), the tag is a full mix.
#[derive(Default, Clone, Copy)]
pub(crate) struct AddressHasher(u64);

const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ b as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        let v = v ^ self.0;
        let region = (v >> 16).wrapping_mul(MIX) >> 28;
        let low = (v >> 4).wrapping_add(region) & ((1 << 57) - 1);
        let x = v as u128 * MIX as u128;
        let tag = (x as u64 ^ (x >> 64) as u64) >> 57;
        self.0 = low | tag << 57;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A call that contradicts the calls before it; the importer repairs it as described.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressIssue {
    /// A free of an address that is not live: ignored.
    FreeOfUnknown(u64),
    /// A realloc of an address that is not live: imported as an alloc.
    ReallocOfUnknown(u64),
    /// An allocation returned an address that is still live: the old object is freed first.
    DuplicateAddress(u64),
}

impl std::fmt::Display for AddressIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddressIssue::FreeOfUnknown(a) => write!(f, "free of {a:#x}, which is not live"),
            AddressIssue::ReallocOfUnknown(a) => {
                write!(f, "realloc of {a:#x}, which is not live")
            }
            AddressIssue::DuplicateAddress(a) => {
                write!(f, "allocation returned {a:#x}, which is still live")
            }
        }
    }
}

/// How many calls of each inconsistent kind an import repaired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IssueCounts {
    pub free_of_unknown: u64,
    pub realloc_of_unknown: u64,
    pub duplicate_address: u64,
}

impl IssueCounts {
    pub fn total(&self) -> u64 {
        self.free_of_unknown + self.realloc_of_unknown + self.duplicate_address
    }

    fn count(&mut self, issue: AddressIssue) {
        match issue {
            AddressIssue::FreeOfUnknown(_) => self.free_of_unknown += 1,
            AddressIssue::ReallocOfUnknown(_) => self.realloc_of_unknown += 1,
            AddressIssue::DuplicateAddress(_) => self.duplicate_address += 1,
        }
    }
}

impl std::fmt::Display for IssueCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} inconsistent call(s) repaired: {} free(s) of an address not live (ignored), {} realloc(s) of an address not live (imported as allocs), {} allocation(s) at a still-live address (old object freed first)",
            self.total(),
            self.free_of_unknown,
            self.realloc_of_unknown,
            self.duplicate_address
        )
    }
}

/// Where an importer's events go: a vector, or (the native recorder's converter) straight
/// into the records it hands on, without a vector of events between them per call.
pub trait EventOut {
    fn push(&mut self, event: Event);
}

impl EventOut for Vec<Event> {
    #[inline(always)]
    fn push(&mut self, event: Event) {
        Vec::push(self, event)
    }
}

/// Maps live addresses to ids and turns calls into events (pushed onto `out`).
#[derive(Debug, Default)]
pub struct AddressImporter {
    ids: FreeIds,
    live: HashMap<u64, ObjectId, BuildHasherDefault<AddressHasher>>,
    pub issues: IssueCounts,
}

/// Every id is taken: more than 2^32 live objects.
#[derive(Debug)]
pub struct IdsExhausted;

impl AddressImporter {
    pub fn new() -> Self {
        Self::default()
    }

    /// An importer with room for `live` live objects before its table grows (each growth
    /// rehashes every live address: a few percent of a large recording's conversion).
    pub fn with_capacity(live: usize) -> Self {
        AddressImporter {
            live: HashMap::with_capacity_and_hasher(live, Default::default()),
            ..Self::default()
        }
    }

    /// The live objects its table has room for before it grows.
    pub(crate) fn capacity(&self) -> usize {
        self.live.capacity()
    }

    fn new_object(&mut self, addr: u64) -> Result<ObjectId, IdsExhausted> {
        let id = self.ids.take().ok_or(IdsExhausted)?;
        self.live.insert(addr, id);
        Ok(id)
    }

    /// Frees whatever is live at `addr` (a repair); returns the issue.
    fn evict(&mut self, addr: u64, out: &mut impl EventOut) -> Option<AddressIssue> {
        let id = self.live.remove(&addr)?;
        self.ids.give_back(id);
        out.push(Event::Free { id });
        let issue = AddressIssue::DuplicateAddress(addr);
        self.issues.count(issue);
        Some(issue)
    }

    /// An allocation of `size` bytes (alignment `align`, 0 = default) at `addr`.
    // Inlined: one of them per call of a conversion (the converter's instance of it was
    // left apart at times, a twentieth more).
    #[inline(always)]
    pub fn alloc(
        &mut self,
        addr: u64,
        size: u64,
        align: u64,
        out: &mut impl EventOut,
    ) -> Result<Option<AddressIssue>, IdsExhausted> {
        // One probe of the table (an evict and then an insert were two, and the table of a
        // large recording is mostly out of cache).
        use std::collections::hash_map::Entry;
        match self.live.entry(addr) {
            Entry::Vacant(slot) => {
                let id = self.ids.take().ok_or(IdsExhausted)?;
                slot.insert(id);
                out.push(Event::Alloc { id, size, align });
                Ok(None)
            }
            Entry::Occupied(mut slot) => {
                // The old object is freed first, so its id may be the one handed out again.
                let old = *slot.get();
                self.ids.give_back(old);
                out.push(Event::Free { id: old });
                let issue = AddressIssue::DuplicateAddress(addr);
                self.issues.count(issue);
                let Some(id) = self.ids.take() else {
                    slot.remove();
                    return Err(IdsExhausted);
                };
                slot.insert(id);
                out.push(Event::Alloc { id, size, align });
                Ok(Some(issue))
            }
        }
    }

    /// A free of `addr` (not null).
    #[inline(always)]
    pub fn free(&mut self, addr: u64, out: &mut impl EventOut) -> Option<AddressIssue> {
        match self.live.remove(&addr) {
            Some(id) => {
                self.ids.give_back(id);
                out.push(Event::Free { id });
                None
            }
            None => {
                let issue = AddressIssue::FreeOfUnknown(addr);
                self.issues.count(issue);
                Some(issue)
            }
        }
    }

    /// A realloc of `old` (not null) to `size` bytes, now at `new`.
    pub fn realloc(
        &mut self,
        old: u64,
        new: u64,
        size: u64,
        out: &mut impl EventOut,
    ) -> Result<Option<AddressIssue>, IdsExhausted> {
        let Some(id) = self.live.remove(&old) else {
            let issue = AddressIssue::ReallocOfUnknown(old);
            self.issues.count(issue);
            let evicted = self.evict(new, out);
            let id = self.new_object(new)?;
            out.push(Event::Alloc { id, size, align: 0 });
            return Ok(evicted.or(Some(issue)));
        };
        let issue = if new != old {
            self.evict(new, out)
        } else {
            None
        };
        self.live.insert(new, id);
        out.push(Event::Realloc { id, size });
        Ok(issue)
    }

    /// First half of a realloc recorded in two steps (the native recorder): the allocator may
    /// release `old` inside the call, so another thread can be handed `old` before the call
    /// returns. Unbinds `old`, keeping the object's id for [`AddressImporter::attach`]; `None`
    /// (counted as a realloc of an unknown address) if `old` is not live.
    pub(crate) fn detach(&mut self, old: u64) -> Option<ObjectId> {
        let id = self.live.remove(&old);
        if id.is_none() {
            self.issues.count(AddressIssue::ReallocOfUnknown(old));
        }
        id
    }

    /// Second half: the object `id` (from `detach`, or `None`: imported as an alloc) now lives
    /// at `new` with `size` bytes.
    pub(crate) fn attach(
        &mut self,
        id: Option<ObjectId>,
        new: u64,
        size: u64,
        out: &mut impl EventOut,
    ) -> Result<Option<AddressIssue>, IdsExhausted> {
        let issue = self.evict(new, out);
        match id {
            Some(id) => {
                self.live.insert(new, id);
                out.push(Event::Realloc { id, size });
            }
            None => {
                let id = self.new_object(new)?;
                out.push(Event::Alloc { id, size, align: 0 });
            }
        }
        Ok(issue)
    }

    /// Frees every live object (an exec replaced the address space), in id order.
    pub(crate) fn release_all(&mut self, out: &mut impl EventOut) {
        let mut ids: Vec<ObjectId> = self.live.drain().map(|(_, id)| id).collect();
        ids.sort_unstable();
        for id in ids {
            self.ids.give_back(id);
            out.push(Event::Free { id });
        }
    }
}
