//! The address importer split in two, so a conversion can spread its address table over
//! threads: [`SlotTable`]s (one per share of the addresses, [`table_of`]) map live addresses
//! to slots of their own, and one [`SlotIds`], given their answers in the calls' order, maps
//! slots to ids and hands the ids out lowest-free-first. Together they make the events and the
//! repairs [`AddressImporter`](super::AddressImporter) makes (tested below against it): each
//! table sees its own addresses' calls in order, and the ids are still taken and given back in
//! the calls' order, by the one `SlotIds`. The slower part, the table of live addresses (most
//! of it out of cache on a large heap), then runs beside the part that must run in order.

use super::addr::{AddressHasher, IdsExhausted};
use super::ids::FreeIds;
use super::{Event, EventOut, IssueCounts, ObjectId};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// The table that keeps `addr`, of `tables`: by 64 KiB region, so a region's neighbouring
/// addresses stay together (the tables' hash relies on them).
#[inline(always)]
pub(crate) fn table_of(addr: u64, tables: usize) -> usize {
    let mixed = (addr >> 16).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    ((mixed * tables as u64) >> 32) as usize
}

/// What a table found at an address: the slot, and whether an object was live there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Slot {
    pub slot: u32,
    pub found: bool,
}

/// Live addresses -> slots, for one share of the addresses. Freed slots are handed out again
/// last-freed-first (any order does: the ids, not the slots, are what the trace shows).
#[derive(Debug, Default)]
pub(crate) struct SlotTable {
    live: HashMap<u64, u32, BuildHasherDefault<AddressHasher>>,
    freed: Vec<u32>,
    next: u32,
}

impl SlotTable {
    pub fn with_capacity(live: usize) -> Self {
        SlotTable {
            live: HashMap::with_capacity_and_hasher(live, Default::default()),
            ..Self::default()
        }
    }

    /// An object now lives at `addr` (an allocation, or a realloc's new address): its slot;
    /// `found` if one was live there already (its slot is the new object's).
    #[inline(always)]
    pub fn bind(&mut self, addr: u64) -> Slot {
        match self.live.entry(addr) {
            Entry::Occupied(e) => Slot {
                slot: *e.get(),
                found: true,
            },
            Entry::Vacant(e) => {
                // More than 2^32 slots live in one table means more than 2^32 objects live:
                // `SlotIds` runs out of ids at this same call, so the shared last slot is
                // never used.
                let slot = self.freed.pop().unwrap_or_else(|| {
                    let s = self.next;
                    self.next = self.next.saturating_add(1);
                    s
                });
                e.insert(slot);
                Slot { slot, found: false }
            }
        }
    }

    /// The object at `addr` is gone (a free, or a realloc's old address): the slot it had;
    /// not `found` if none was live there.
    #[inline(always)]
    pub fn unbind(&mut self, addr: u64) -> Slot {
        match self.live.remove(&addr) {
            Some(slot) => {
                self.freed.push(slot);
                Slot { slot, found: true }
            }
            None => Slot::default(),
        }
    }

    /// Every object is gone (an exec).
    pub fn clear(&mut self) {
        self.live.clear();
        self.freed.clear();
        self.next = 0;
    }
}

/// Slots -> ids, lowest-free-first, in the calls' order: the events and repairs of
/// [`AddressImporter`](super::AddressImporter), from the tables' answers.
#[derive(Debug)]
pub(crate) struct SlotIds {
    ids: FreeIds,
    /// Per table, the id in each slot (meaningful while the slot is live).
    of_slot: Vec<Vec<ObjectId>>,
    /// Ids between a realloc's two points: not in any table, so an exec does not free them
    /// (as the importer's table does not hold them either).
    detached: Vec<ObjectId>,
    pub issues: IssueCounts,
}

impl SlotIds {
    pub fn new(tables: usize) -> Self {
        SlotIds {
            ids: FreeIds::default(),
            of_slot: vec![Vec::new(); tables],
            detached: Vec::new(),
            issues: IssueCounts::default(),
        }
    }

    #[inline(always)]
    fn id(&self, table: usize, at: Slot) -> ObjectId {
        self.of_slot[table][at.slot as usize]
    }

    #[inline(always)]
    fn set(&mut self, table: usize, at: Slot, id: ObjectId) {
        let slots = &mut self.of_slot[table];
        let i = at.slot as usize;
        if i >= slots.len() {
            slots.resize(i + 1, 0);
        }
        slots[i] = id;
    }

    /// The object live at `at` before a new one took its address: freed (a repair).
    #[inline(always)]
    fn evict(&mut self, table: usize, at: Slot, out: &mut impl EventOut) {
        let old = self.id(table, at);
        self.ids.give_back(old);
        out.push(Event::Free { id: old });
        self.issues.duplicate_address += 1;
    }

    /// An allocation that `table` bound at `at`.
    #[inline(always)]
    pub fn alloc(
        &mut self,
        table: usize,
        at: Slot,
        size: u64,
        align: u64,
        out: &mut impl EventOut,
    ) -> Result<(), IdsExhausted> {
        if at.found {
            self.evict(table, at, out);
        }
        let id = self.ids.take().ok_or(IdsExhausted)?;
        self.set(table, at, id);
        out.push(Event::Alloc { id, size, align });
        Ok(())
    }

    /// A free that `table` unbound at `at`.
    #[inline(always)]
    pub fn free(&mut self, table: usize, at: Slot, out: &mut impl EventOut) {
        if at.found {
            let id = self.id(table, at);
            self.ids.give_back(id);
            out.push(Event::Free { id });
        } else {
            self.issues.free_of_unknown += 1;
        }
    }

    /// A realloc's first point, its old address unbound at `at`: the object's id, kept for
    /// [`SlotIds::attach`] (`None`, counted, if nothing was live there).
    pub fn detach(&mut self, table: usize, at: Slot) -> Option<ObjectId> {
        if !at.found {
            self.issues.realloc_of_unknown += 1;
            return None;
        }
        let id = self.id(table, at);
        self.detached.push(id);
        Some(id)
    }

    /// A realloc's second point: the object `id` (from `detach`; `None`: imported as an
    /// alloc) now lives at the new address, bound at `at`.
    pub fn attach(
        &mut self,
        id: Option<ObjectId>,
        table: usize,
        at: Slot,
        size: u64,
        out: &mut impl EventOut,
    ) -> Result<(), IdsExhausted> {
        if at.found {
            self.evict(table, at, out);
        }
        match id {
            Some(id) => {
                if let Some(i) = self.detached.iter().rposition(|&d| d == id) {
                    self.detached.swap_remove(i);
                }
                self.set(table, at, id);
                out.push(Event::Realloc { id, size });
            }
            None => {
                let id = self.ids.take().ok_or(IdsExhausted)?;
                self.set(table, at, id);
                out.push(Event::Alloc { id, size, align: 0 });
            }
        }
        Ok(())
    }

    /// Frees every object in the tables (an exec replaced the address space), in id order.
    pub fn release_all(&mut self, out: &mut impl EventOut) {
        let mut live = self.ids.taken();
        live.retain(|id| !self.detached.contains(id));
        for id in live {
            self.ids.give_back(id);
            out.push(Event::Free { id });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::AddressImporter;

    /// One of the calls a conversion translates.
    #[derive(Clone, Copy, Debug)]
    enum Op {
        Alloc(u64),
        Free(u64),
        Begin(usize, u64),
        End(usize, u64),
        ReleaseAll,
    }

    /// The events and repair counts of `ops` through one importer (the reference) and through
    /// `tables` slot tables and one `SlotIds`.
    fn both(ops: &[Op], tables: usize) -> ((Vec<Event>, IssueCounts), (Vec<Event>, IssueCounts)) {
        let mut importer = AddressImporter::new();
        let mut want = Vec::new();
        let mut pending = [None, None, None];
        for (i, &op) in ops.iter().enumerate() {
            let size = i as u64 % 100 + 1;
            match op {
                Op::Alloc(a) => drop(importer.alloc(a, size, 0, &mut want).unwrap()),
                Op::Free(a) => drop(importer.free(a, &mut want)),
                Op::Begin(t, a) => pending[t] = Some(importer.detach(a)),
                Op::End(t, a) => {
                    let id = pending[t].take().flatten();
                    importer.attach(id, a, size, &mut want).unwrap();
                }
                Op::ReleaseAll => importer.release_all(&mut want),
            }
        }
        let mut split: Vec<SlotTable> = (0..tables).map(|_| SlotTable::default()).collect();
        let mut ids = SlotIds::new(tables);
        let mut got = Vec::new();
        let mut pending = [None, None, None];
        for (i, &op) in ops.iter().enumerate() {
            let size = i as u64 % 100 + 1;
            let on = |a: u64| table_of(a, tables);
            match op {
                Op::Alloc(a) => {
                    let at = split[on(a)].bind(a);
                    ids.alloc(on(a), at, size, 0, &mut got).unwrap();
                }
                Op::Free(a) => ids.free(on(a), split[on(a)].unbind(a), &mut got),
                Op::Begin(t, a) => pending[t] = Some(ids.detach(on(a), split[on(a)].unbind(a))),
                Op::End(t, a) => {
                    let id = pending[t].take().flatten();
                    let at = split[on(a)].bind(a);
                    ids.attach(id, on(a), at, size, &mut got).unwrap();
                }
                Op::ReleaseAll => {
                    split.iter_mut().for_each(SlotTable::clear);
                    ids.release_all(&mut got);
                }
            }
        }
        ((want, importer.issues), (got, ids.issues))
    }

    /// Long random runs of every call, repairs included (frees of dead addresses, reallocs
    /// of dead ones, allocations at live ones, reallocs left open across an exec), over
    /// addresses packed into a few 64 KiB regions (so every table gets many): the same
    /// events as the importer, on 1 to 5 tables.
    #[test]
    fn split_tables_make_the_importers_events() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut ops = Vec::new();
        let mut live: Vec<u64> = Vec::new();
        let mut open = [None::<u64>; 3];
        for step in 0..200_000u64 {
            let r = next();
            let fresh = 0x7f00_0000_0000 + (r >> 8) % 64 * 0x1_0000 + (r >> 20) % 4096 * 16;
            let op = if step % 50_000 == 49_999 {
                live.clear();
                ops.push(Op::ReleaseAll);
                continue;
            } else {
                r % 100
            };
            let op = match op {
                0..=44 => {
                    live.push(fresh);
                    Op::Alloc(fresh)
                }
                45..=84 if !live.is_empty() => {
                    Op::Free(live.swap_remove((r >> 40) as usize % live.len()))
                }
                85..=89 => Op::Free(fresh),
                90..=95 => {
                    let t = (r >> 50) as usize % 3;
                    match open[t].take() {
                        Some(_) => {
                            live.push(fresh);
                            Op::End(t, fresh)
                        }
                        None if !live.is_empty() => {
                            let a = live.swap_remove((r >> 40) as usize % live.len());
                            open[t] = Some(a);
                            Op::Begin(t, a)
                        }
                        None => Op::Begin(t, fresh),
                    }
                }
                96..=98 if !live.is_empty() => Op::Alloc(live[(r >> 40) as usize % live.len()]),
                _ => Op::Alloc(fresh),
            };
            ops.push(op);
        }
        for tables in 1..=5 {
            let ((want, want_issues), (got, got_issues)) = both(&ops, tables);
            assert!(want_issues.total() > 1000, "{want_issues:?}");
            assert!(want_issues.free_of_unknown > 0 && want_issues.realloc_of_unknown > 0);
            assert!(want_issues.duplicate_address > 0);
            assert_eq!(got_issues, want_issues, "{tables} tables");
            assert_eq!(got.len(), want.len(), "{tables} tables");
            assert!(got == want, "{tables} tables: the events differ");
        }
    }

    /// An exec between a realloc's two points: the object kept for the realloc is not freed
    /// by the exec, in the importer or here (hand-derived: ids 0 and 1 live, 1 detached; the
    /// exec frees 0 only; the realloc's end then moves 1, and a new object takes 0).
    #[test]
    fn an_exec_leaves_a_realloc_in_flight_alone() {
        let ops = [
            Op::Alloc(0x1000),
            Op::Alloc(0x2000),
            Op::Begin(0, 0x2000),
            Op::ReleaseAll,
            Op::End(0, 0x3000),
            Op::Alloc(0x4000),
        ];
        let ((want, _), (got, _)) = both(&ops, 2);
        let expected = vec![
            Event::Alloc {
                id: 0,
                size: 1,
                align: 0,
            },
            Event::Alloc {
                id: 1,
                size: 2,
                align: 0,
            },
            Event::Free { id: 0 },
            Event::Realloc { id: 1, size: 5 },
            Event::Alloc {
                id: 0,
                size: 6,
                align: 0,
            },
        ];
        assert_eq!(want, expected);
        assert_eq!(got, expected);
    }

    /// Addresses spread over the tables, none piling onto one: 4,096 neighbouring 64 KiB
    /// regions over 4 tables, each within a tenth of a quarter.
    #[test]
    fn regions_spread_over_the_tables() {
        let mut per = [0usize; 4];
        for region in 0..4096u64 {
            per[table_of(0x5555_0000_0000 + region * 0x1_0000, 4)] += 1;
        }
        assert!(per.iter().all(|&n| n.abs_diff(1024) < 103), "{per:?}");
        // A region's addresses all go to one table.
        let t = table_of(0x5555_1234_0000, 4);
        assert!((0..4096).all(|i| table_of(0x5555_1234_0000 + i * 16, 4) == t));
    }
}
