//! Per-class accounting of a replay, kept beside the arena model: which class each live object
//! is in, how many objects and bytes each class holds, and their values at the active peak.
//!
//! The arena model gives the totals and the slabs of each bin; the ledger derives the rest
//! from the events and the class table alone, so the two are independent and their sums can be
//! checked against each other.

use crate::sizeclass::{ClassKind, SizeClasses};
use crate::trace::{Event, ObjectId};

/// One class's running state (or its copy at the active peak).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ClassState {
    pub live: u64,
    pub live_requested: u64,
    pub live_usable: u64,
    pub slabs: u64,
}

/// Counters that only grow, or only keep a maximum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ClassCounters {
    pub allocations: u64,
    pub peak_live: u64,
    pub peak_slabs: u64,
}

/// What the ledger knows of one live object (16 bytes: the table is read at random on every
/// free, so its size matters). The usable size is the class size for small objects and is
/// derived again for large ones.
#[derive(Clone, Copy, Debug)]
struct Object {
    size: u64,
    class: u32,
    /// The alignment asked for (at most one page, checked on the way in).
    align: u32,
}

const NO_CLASS: u32 = u32::MAX;

/// An event the ledger cannot account for (the arena model should have refused it first).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("object {0} is not live")]
    NotLive(ObjectId),
    #[error("object {0} is already live")]
    AlreadyLive(ObjectId),
    #[error("request of {0} bytes is past the largest size class")]
    TooLarge(u64),
    #[error("alignment {0} is not modelled (a power of two up to one page)")]
    Alignment(u64),
}

pub(super) struct Ledger {
    classes: SizeClasses,
    nbins: usize,
    /// The class of each small usable size, indexed by `(usable - 1) >> 3` (every class is a
    /// multiple of 8 bytes): a table lookup instead of a search on every event. Entry `i`
    /// holds the least class of at least `8i + 1` bytes, so it is also the class of any
    /// request `r` with `(r - 1) >> 3 == i`: an unaligned small request needs no rounding.
    small_index: Vec<u16>,
    /// The size of each small class (the usable size of its objects), by class index.
    bin_size: Vec<u64>,
    pad: u64,
    objects: Vec<Object>,
    pub state: Vec<ClassState>,
    pub counters: Vec<ClassCounters>,
    /// The state at the last active peak, brought up to date lazily: only classes touched
    /// since then are copied when a new peak is reached, so each event costs O(1).
    pub at_peak: Vec<ClassState>,
    touched: Vec<u32>,
    is_touched: Vec<bool>,
    /// Classes the current event changed (at most two), for the caller to read slabs.
    pub changed: [u32; 2],
    pub live_large: u64,
}

impl Ledger {
    pub fn new(classes: &SizeClasses) -> Self {
        let n = classes.all().len();
        let pad = if classes.config().cache_oblivious {
            classes.config().page()
        } else {
            0
        };
        let mut small_index = vec![0u16; (classes.small_maxclass() >> 3) as usize];
        let mut start = 0;
        for class in classes.bins() {
            let end = (class.size >> 3) as usize;
            small_index[start..end].fill(class.index as u16);
            start = end;
        }
        Ledger {
            classes: classes.clone(),
            nbins: classes.bins().len(),
            small_index,
            bin_size: classes.all()[..classes.bins().len()]
                .iter()
                .map(|c| c.size)
                .collect(),
            pad,
            objects: Vec::new(),
            state: vec![ClassState::default(); n],
            counters: vec![ClassCounters::default(); n],
            at_peak: vec![ClassState::default(); n],
            touched: Vec::new(),
            is_touched: vec![false; n],
            changed: [NO_CLASS; 2],
            live_large: 0,
        }
    }

    /// The padding page each live large allocation carries (0 without cache-oblivious).
    pub fn large_pad(&self) -> u64 {
        self.pad
    }

    pub fn nbins(&self) -> usize {
        self.nbins
    }

    /// jemalloc's `sz_sa2u`: an aligned small request takes the least class that is a
    /// multiple of the alignment (classes of a small size divisible by it are aligned);
    /// when that class would be large, or the alignment needs a large extent, the least large
    /// class at or above the request serves it (alignments up to a page are free there).
    fn usable_of(&self, size: u64, align: u64) -> Result<u64, LedgerError> {
        let too_large = LedgerError::TooLarge(size);
        let plain = |s: u64| self.classes.usable_size(s).ok_or(too_large.clone());
        if align <= 1 {
            return plain(size);
        }
        if !align.is_power_of_two() || align > self.classes.config().page() {
            return Err(LedgerError::Alignment(align));
        }
        let large_min = self.classes.large_minclass();
        if size <= self.classes.small_maxclass() {
            let usable = plain(size.max(1).div_ceil(align) * align)?;
            if usable < large_min {
                return Ok(usable);
            }
        }
        plain(size.max(large_min))
    }

    #[inline]
    fn class_of(&self, size: u64, align: u64) -> Result<(u64, u32), LedgerError> {
        // Most events: an unaligned small request, its class read straight from the table
        // (what `usable_of` then the lookup below would find: the least class >= the request).
        if align <= 1 {
            if let Some(&index) = self.small_index.get((size.max(1) - 1) as usize >> 3) {
                return Ok((self.bin_size[usize::from(index)], u32::from(index)));
            }
        }
        let usable = self.usable_of(size, align)?;
        if let Some(&index) = self.small_index.get(((usable - 1) >> 3) as usize) {
            return Ok((usable, u32::from(index)));
        }
        let class = self
            .classes
            .class_for(usable)
            .ok_or(LedgerError::TooLarge(size))?;
        Ok((usable, class.index as u32))
    }

    fn usable_of_object(&self, object: &Object) -> u64 {
        let c = object.class as usize;
        if c < self.nbins {
            self.bin_size[c]
        } else {
            // Accepted on the way in, so it has a usable size.
            self.usable_of(object.size, u64::from(object.align))
                .unwrap_or(self.classes.all()[c].size)
        }
    }

    #[inline]
    fn touch(&mut self, class: u32) {
        if !self.is_touched[class as usize] {
            self.is_touched[class as usize] = true;
            self.touched.push(class);
        }
    }

    /// Adds object `id` of `size` bytes (aligned to `align`), whose class is `class` of
    /// `usable` bytes ([`Ledger::class_of`]). Inlined, as `remove` and `apply`: they run on
    /// every event of every build, and the calls cost as much as their bodies.
    #[inline(always)]
    fn add(
        &mut self,
        id: ObjectId,
        size: u64,
        align: u64,
        (usable, class): (u64, u32),
        counted: bool,
    ) -> Result<u32, LedgerError> {
        let slot = id as usize;
        if slot >= self.objects.len() {
            self.objects.resize(
                slot + 1,
                Object {
                    size: 0,
                    class: NO_CLASS,
                    align: 0,
                },
            );
        }
        if self.objects[slot].class != NO_CLASS {
            return Err(LedgerError::AlreadyLive(id));
        }
        self.objects[slot] = Object {
            size,
            class,
            // usable_of accepted it: at most one page.
            align: align as u32,
        };
        let c = class as usize;
        let state = &mut self.state[c];
        state.live += 1;
        state.live_requested += size;
        state.live_usable += usable;
        let counters = &mut self.counters[c];
        counters.allocations += u64::from(counted);
        counters.peak_live = counters.peak_live.max(state.live);
        if c >= self.nbins {
            self.live_large += 1;
        }
        self.touch(class);
        Ok(class)
    }

    #[inline(always)]
    fn remove(&mut self, id: ObjectId) -> Result<Object, LedgerError> {
        let object = match self.objects.get(id as usize) {
            Some(o) if o.class != NO_CLASS => *o,
            _ => return Err(LedgerError::NotLive(id)),
        };
        self.objects[id as usize].class = NO_CLASS;
        let usable = self.usable_of_object(&object);
        let c = object.class as usize;
        let state = &mut self.state[c];
        state.live -= 1;
        state.live_requested -= object.size;
        state.live_usable -= usable;
        if c >= self.nbins {
            self.live_large -= 1;
        }
        self.touch(object.class);
        Ok(object)
    }

    /// Accounts for one event. A realloc that lands in another class counts as an allocation
    /// of that class (jemalloc allocates a new region for it); one that stays is not counted.
    #[inline]
    pub fn apply(&mut self, event: Event) -> Result<(), LedgerError> {
        self.changed = [NO_CLASS; 2];
        match event {
            Event::Alloc { id, size, align } => {
                let class = self.class_of(size, align)?;
                self.changed[0] = self.add(id, size, align, class, true)?;
            }
            Event::Free { id } => {
                self.changed[0] = self.remove(id)?.class;
            }
            Event::Realloc { id, size } => {
                let old = self.remove(id)?;
                let align = u64::from(old.align);
                let class = self.class_of(size, align)?;
                self.changed[0] = old.class;
                self.changed[1] = self.add(id, size, align, class, class.1 != old.class)?;
            }
        }
        Ok(())
    }

    /// Records the slabs the arena model now holds for `bin` (a small class).
    pub(crate) fn set_slabs(&mut self, bin: usize, slabs: u64) {
        self.state[bin].slabs = slabs;
        let counters = &mut self.counters[bin];
        counters.peak_slabs = counters.peak_slabs.max(slabs);
    }

    /// The current state becomes the state at the active peak.
    pub(crate) fn mark_peak(&mut self) {
        for &class in &self.touched {
            self.at_peak[class as usize] = self.state[class as usize];
            self.is_touched[class as usize] = false;
        }
        self.touched.clear();
    }

    pub fn is_small(&self, class: usize) -> bool {
        self.classes.all()[class].kind == ClassKind::Small
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizeclass::AllocatorConfig;

    /// The table read for unaligned small requests gives, for every request up to the
    /// largest small class, the class the class table's own search finds (`class_for`: the
    /// least class of at least the request, a binary search over the classes) and that
    /// class's size as the usable size, in every preset build; past it, the general path.
    #[test]
    fn unaligned_small_requests_take_the_least_class_at_or_above_them() {
        for preset in ["default", "quantum8", "page16k", "page64k", "dev"] {
            let classes = SizeClasses::new(AllocatorConfig::preset(preset).unwrap()).unwrap();
            let ledger = Ledger::new(&classes);
            for size in 0..=classes.small_maxclass() + 64 {
                let expected = classes.class_for(size).unwrap();
                let usable = classes.usable_size(size).unwrap();
                for align in [0, 1] {
                    assert_eq!(
                        ledger.class_of(size, align),
                        Ok((usable, expected.index as u32)),
                        "{preset}: request {size}, align {align}"
                    );
                }
                if size <= classes.small_maxclass() {
                    assert_eq!(usable, expected.size, "{preset}: request {size}");
                }
            }
        }
    }
}
