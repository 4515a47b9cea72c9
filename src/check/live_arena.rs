//! One private jemalloc arena driven by a trace's events: no thread cache, decay off, its
//! statistics read by MIB (`LiveArena`). The comparison with the model is `arena_replay.rs`;
//! the child that replays for another build is `arena_child.rs`.

use crate::live::ctl::{mib, read_mib};
use crate::live::Api;
use crate::sim::{BinStats, Snapshot};
use crate::trace::Event;
use anyhow::{bail, ensure, Result};
use std::ffi::c_void;
use tikv_jemalloc_sys as sys;

/// The statistics of one private arena, read by MIB (names resolved once).
struct StatsReader {
    api: Api,
    epoch: Vec<usize>,
    small: Vec<usize>,
    large: Vec<usize>,
    pactive: Vec<usize>,
    /// Per bin: curregs, curslabs, nonfull_slabs.
    bins: Vec<[Vec<usize>; 3]>,
    page: u64,
}

impl StatsReader {
    fn new(api: Api, arena: u32, nbins: usize, page: u64) -> Result<Self> {
        let arena_mib = |name: &str| -> Result<Vec<usize>> {
            let mut m = mib(&api, name)?;
            m[2] = arena as usize;
            Ok(m)
        };
        let bins = (0..nbins)
            .map(|j| {
                let field = |f: &str| -> Result<Vec<usize>> {
                    let mut m = arena_mib(&format!("stats.arenas.0.bins.0.{f}"))?;
                    m[4] = j;
                    Ok(m)
                };
                Ok([
                    field("curregs")?,
                    field("curslabs")?,
                    field("nonfull_slabs")?,
                ])
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(StatsReader {
            api,
            epoch: mib(&api, "epoch")?,
            small: arena_mib("stats.arenas.0.small.allocated")?,
            large: arena_mib("stats.arenas.0.large.allocated")?,
            pactive: arena_mib("stats.arenas.0.pactive")?,
            bins,
            page,
        })
    }

    fn snapshot(&self, event: u64) -> Result<Snapshot> {
        self.api.write_mib_u64(&self.epoch, 1)?;
        let bins = self
            .bins
            .iter()
            .map(|[r, s, n]| {
                Ok(BinStats {
                    curregs: read_mib(&self.api, r)?,
                    curslabs: read_mib(&self.api, s)?,
                    nonfull_slabs: read_mib(&self.api, n)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Snapshot {
            event,
            allocated_bytes: read_mib(&self.api, &self.small)? + read_mib(&self.api, &self.large)?,
            active_bytes: read_mib(&self.api, &self.pactive)? * self.page,
            bins,
        })
    }
}

/// A fresh private arena of the running jemalloc, driven by trace events.
pub struct LiveArena {
    api: Api,
    index: u32,
    flags: i32,
    ptrs: Vec<*mut c_void>,
    aligns: Vec<u64>,
    stats: StatsReader,
    events: u64,
}

impl LiveArena {
    /// Creates the arena in the linked jemalloc and turns its decay off.
    pub fn new() -> Result<Self> {
        Self::with_api(Api::linked())
    }

    /// Creates the arena through `api` and turns its decay off. Fails clearly when the
    /// jemalloc has no statistics.
    pub(crate) fn with_api(api: Api) -> Result<Self> {
        if !api.has_stats() {
            bail!("this jemalloc was built without statistics (config.stats is false): a live replay cannot read them");
        }
        let config = api.config()?;
        // SAFETY: arenas.nbins is unsigned; arenas.create returns the new arena's unsigned
        // index; arena.<i>.*_decay_ms take an ssize_t (-1 disables decay).
        let (nbins, index) = unsafe {
            (
                api.read::<u32>("arenas.nbins")? as usize,
                api.read::<u32>("arenas.create")?,
            )
        };
        for key in ["dirty_decay_ms", "muzzy_decay_ms"] {
            unsafe { api.write(&format!("arena.{index}.{key}"), -1isize)? };
        }
        Ok(LiveArena {
            api,
            index,
            flags: sys::MALLOCX_ARENA(index as usize) | sys::MALLOCX_TCACHE_NONE,
            ptrs: Vec::new(),
            aligns: Vec::new(),
            stats: StatsReader::new(api, index, nbins, config.page())?,
            events: 0,
        })
    }

    fn flags_for(&self, align: u64) -> i32 {
        if align > 1 {
            self.flags | align.trailing_zeros() as i32
        } else {
            self.flags
        }
    }

    /// Applies one event; an event the model would reject is rejected here too, before
    /// jemalloc sees it.
    pub fn apply(&mut self, event: Event) -> Result<()> {
        self.events += 1;
        let n = self.events;
        let live =
            |ptrs: &Vec<*mut c_void>, id: u32| ptrs.get(id as usize).is_some_and(|p| !p.is_null());
        match event {
            Event::Alloc { id, size, align } => {
                ensure!(
                    !live(&self.ptrs, id),
                    "event {n}: alloc of id {id}, which is already live"
                );
                ensure!(
                    align <= 1 || align.is_power_of_two(),
                    "event {n}: alignment {align} is not a power of two"
                );
                // SAFETY: size >= 1; flags name our arena.
                let p = unsafe { (self.api.mallocx)(size.max(1) as usize, self.flags_for(align)) };
                ensure!(!p.is_null(), "event {n}: mallocx({size}) failed");
                let i = id as usize;
                if i >= self.ptrs.len() {
                    self.ptrs.resize(i + 1, std::ptr::null_mut());
                    self.aligns.resize(i + 1, 0);
                }
                self.ptrs[i] = p;
                self.aligns[i] = align;
            }
            Event::Free { id } => {
                ensure!(
                    live(&self.ptrs, id),
                    "event {n}: free of id {id}, which is not live"
                );
                let p = std::mem::replace(&mut self.ptrs[id as usize], std::ptr::null_mut());
                // SAFETY: p came from mallocx/rallocx in this arena and is freed once.
                unsafe { (self.api.dallocx)(p, self.flags) };
            }
            Event::Realloc { id, size } => {
                ensure!(
                    live(&self.ptrs, id),
                    "event {n}: realloc of id {id}, which is not live"
                );
                let i = id as usize;
                let flags = self.flags_for(self.aligns[i]);
                // SAFETY: the pointer is live in this arena; size >= 1.
                let p = unsafe { (self.api.rallocx)(self.ptrs[i], size.max(1) as usize, flags) };
                ensure!(!p.is_null(), "event {n}: rallocx({size}) failed");
                self.ptrs[i] = p;
            }
        }
        Ok(())
    }

    /// The arena's statistics now (`epoch`, then `stats.arenas.<a>.*`).
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.stats.snapshot(self.events)
    }
}

// SAFETY: the pointers are this arena's own allocations, used by one thread at a time (the
// owner's); jemalloc frees a pointer of an explicit arena from any thread.
unsafe impl Send for LiveArena {}

impl Drop for LiveArena {
    fn drop(&mut self) {
        for p in self.ptrs.drain(..) {
            if !p.is_null() {
                // SAFETY: every non-null pointer is live in this arena.
                unsafe { (self.api.dallocx)(p, self.flags) };
            }
        }
        // The arena is empty now.
        self.api.call(&format!("arena.{}.destroy", self.index));
    }
}
