//! Test helpers: hand-built traces and a small arena double that follows jemalloc's bin rules
//! (a new slab only when no slab of the bin has a free region; the lowest slab with a free
//! region first; an empty slab returned at once). Placement of large extents is not modelled:
//! it changes no byte count.
#![allow(dead_code)]

use fragsim::sizeclass::{AllocatorConfig, SizeClasses};
use fragsim::trace::Event;
use fragsim::whatif::{SlabTurnover, Totals, WhatifModel};

/// The trace the hand computations in tests/whatif.rs follow (323 events):
/// 200 x 24 B (ids 0..199); one 20000 B (id 200); free ids 0..99; free id 200;
/// 10 x 40 B (ids 0..9, recycled lowest first); realloc id 150 to 100 B; free ids 0..9.
pub fn hand_trace() -> Vec<Event> {
    let mut t = Vec::new();
    for id in 0..200 {
        t.push(Event::Alloc {
            id,
            size: 24,
            align: 0,
        });
    }
    t.push(Event::Alloc {
        id: 200,
        size: 20000,
        align: 0,
    });
    for id in 0..100 {
        t.push(Event::Free { id });
    }
    t.push(Event::Free { id: 200 });
    for id in 0..10 {
        t.push(Event::Alloc {
            id,
            size: 40,
            align: 0,
        });
    }
    t.push(Event::Realloc { id: 150, size: 100 });
    for id in 0..10 {
        t.push(Event::Free { id });
    }
    t
}

/// A reproducible mix of allocs, frees and reallocs, small and large, ids recycled lowest
/// first (a tiny xorshift, so the test needs no extra crate).
pub fn random_trace(n: usize, seed: u64) -> Vec<Event> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut live: Vec<u32> = Vec::new();
    let mut free_ids: std::collections::BTreeSet<u32> = Default::default();
    let mut next_id = 0u32;
    let mut t = Vec::new();
    let size = |r: u64| match r % 10 {
        0 => 16_385 + r % 400_000,
        1..=3 => 1 + r % 2048,
        _ => 1 + r % 200,
    };
    while t.len() < n {
        let r = next();
        let action = r % 8;
        if live.is_empty() || action < 4 {
            let id = match free_ids.pop_first() {
                Some(id) => id,
                None => {
                    next_id += 1;
                    next_id - 1
                }
            };
            live.push(id);
            t.push(Event::Alloc {
                id,
                size: size(next()),
                align: 0,
            });
        } else if action < 7 {
            let id = live.swap_remove((next() % live.len() as u64) as usize);
            free_ids.insert(id);
            t.push(Event::Free { id });
        } else {
            let id = live[(next() % live.len() as u64) as usize];
            t.push(Event::Realloc {
                id,
                size: size(next()),
            });
        }
    }
    t
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DoubleError(String);

#[derive(Clone, Copy)]
enum Place {
    Dead,
    Small {
        bin: usize,
        slab: usize,
        size: u64,
        usable: u64,
    },
    Large {
        size: u64,
        usable: u64,
    },
}

pub struct CountingArena {
    classes: SizeClasses,
    /// Per bin: free regions of each slab slot (`None`: no slab there).
    slabs: Vec<Vec<Option<u64>>>,
    objects: Vec<Place>,
    totals: Totals,
    turnover: SlabTurnover,
}

impl CountingArena {
    pub fn new(config: AllocatorConfig) -> Self {
        let classes = SizeClasses::new(config).unwrap();
        let nbins = classes.bins().len();
        CountingArena {
            classes,
            slabs: vec![Vec::new(); nbins],
            objects: Vec::new(),
            totals: Totals::default(),
            turnover: SlabTurnover::default(),
        }
    }

    fn pad(&self) -> u64 {
        if self.classes.config().cache_oblivious {
            self.classes.config().page()
        } else {
            0
        }
    }

    fn alloc(&mut self, size: u64) -> Result<Place, DoubleError> {
        let usable = self
            .classes
            .usable_size(size)
            .ok_or_else(|| DoubleError(format!("{size} too large")))?;
        self.totals.requested += size;
        self.totals.allocated += usable;
        if !self.classes.is_small(usable) {
            self.totals.active += usable + self.pad();
            self.totals.mapped = self.totals.mapped.max(self.totals.active);
            return Ok(Place::Large { size, usable });
        }
        let class = *self.classes.class_for(usable).unwrap();
        let bin = &mut self.slabs[class.index];
        let slab = match bin.iter().position(|s| s.is_some_and(|f| f > 0)) {
            Some(i) => i,
            None => {
                self.totals.active += class.slab_size;
                self.turnover.created += 1;
                match bin.iter().position(Option::is_none) {
                    Some(i) => {
                        bin[i] = Some(class.nregs);
                        i
                    }
                    None => {
                        bin.push(Some(class.nregs));
                        bin.len() - 1
                    }
                }
            }
        };
        *bin[slab].as_mut().unwrap() -= 1;
        self.totals.mapped = self.totals.mapped.max(self.totals.active);
        Ok(Place::Small {
            bin: class.index,
            slab,
            size,
            usable,
        })
    }

    fn free(&mut self, place: Place) {
        match place {
            Place::Dead => {}
            Place::Large { size, usable } => {
                self.totals.requested -= size;
                self.totals.allocated -= usable;
                self.totals.active -= usable + self.pad();
            }
            Place::Small {
                bin,
                slab,
                size,
                usable,
            } => {
                self.totals.requested -= size;
                self.totals.allocated -= usable;
                let class = self.classes.bins()[bin];
                let free = self.slabs[bin][slab].as_mut().unwrap();
                *free += 1;
                if *free == class.nregs {
                    self.slabs[bin][slab] = None;
                    self.totals.active -= class.slab_size;
                    self.turnover.released += 1;
                }
            }
        }
    }

    fn take(&mut self, id: u32) -> Result<Place, DoubleError> {
        match self.objects.get_mut(id as usize) {
            Some(p) if !matches!(p, Place::Dead) => Ok(std::mem::replace(p, Place::Dead)),
            _ => Err(DoubleError(format!("object {id} is not live"))),
        }
    }
}

impl WhatifModel for CountingArena {
    type Error = DoubleError;

    fn apply(&mut self, event: Event) -> Result<(), DoubleError> {
        match event {
            Event::Alloc { id, size, .. } => {
                let place = self.alloc(size)?;
                if self.objects.len() <= id as usize {
                    self.objects.resize(id as usize + 1, Place::Dead);
                }
                self.objects[id as usize] = place;
            }
            Event::Free { id } => {
                let place = self.take(id)?;
                self.free(place);
            }
            Event::Realloc { id, size } => {
                let old = self.take(id)?;
                let same_class = match old {
                    Place::Small { usable, .. } => self.classes.usable_size(size) == Some(usable),
                    _ => false,
                };
                let place = if same_class {
                    // jemalloc keeps the region; only the requested size changes.
                    if let Place::Small {
                        bin,
                        slab,
                        size: old_size,
                        usable,
                    } = old
                    {
                        self.totals.requested = self.totals.requested - old_size + size;
                        Place::Small {
                            bin,
                            slab,
                            size,
                            usable,
                        }
                    } else {
                        unreachable!()
                    }
                } else {
                    let new = self.alloc(size)?;
                    self.free(old);
                    new
                };
                self.objects[id as usize] = place;
            }
        }
        Ok(())
    }

    fn totals(&self) -> Totals {
        self.totals
    }

    fn slabs(&self, bin: usize) -> u64 {
        self.slabs[bin].iter().filter(|s| s.is_some()).count() as u64
    }

    fn slab_turnover(&self) -> SlabTurnover {
        self.turnover
    }
}
