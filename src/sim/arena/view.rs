//! Read-only views of an arena's extents, for observers that attribute its memory
//! (`crate::blame`): which extent is a slab of which bin and how full, or a large block.

use super::super::pac::State;
use super::ArenaModel;

/// One active extent of an arena as an observer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtentView {
    /// A slab of bin `bin`: `nregs` regions of `size` bytes in `slab_size` bytes, `nfree`
    /// of them free.
    Slab {
        bin: usize,
        size: u64,
        nregs: u32,
        nfree: u32,
        slab_size: u64,
    },
    /// A large block of `bytes` active bytes, `pad` of them the cache-oblivious padding page
    /// (usable size `bytes - pad`).
    Large { bytes: u64, pad: u64 },
}

impl ArenaModel {
    /// The extent `extent` if it is active (a slab or a large block), else `None`.
    pub(crate) fn extent_view(&self, extent: u32) -> Option<ExtentView> {
        let e = self.pac.ext.v.get(extent as usize)?;
        if e.state != State::Active {
            return None;
        }
        Some(if e.slab {
            let bin = &self.bins[e.bin as usize];
            ExtentView::Slab {
                bin: e.bin as usize,
                size: bin.size,
                nregs: bin.nregs,
                nfree: e.nfree,
                slab_size: bin.slab_size,
            }
        } else {
            ExtentView::Large {
                bytes: e.size,
                pad: self.large_pad,
            }
        })
    }
}

/// An arena's extents as jemalloc's statistics count them (`stats.arenas.<i>.lextents` and
/// `.extents`): the usable size of every active large extent (cached large objects and
/// internal blocks included), and the bytes of every extent in the dirty, muzzy and
/// retained sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtentTally {
    pub large: Vec<u64>,
    pub dirty: Vec<u64>,
    pub muzzy: Vec<u64>,
    pub retained: Vec<u64>,
}

impl ArenaModel {
    /// Every extent record in use, tallied as [`ExtentTally`] says (one pass over the
    /// records: for a statistics dump, not the replay's loop).
    pub(crate) fn extent_tally(&self) -> ExtentTally {
        let mut t = ExtentTally::default();
        for e in &self.pac.ext.v {
            match e.state {
                State::Active if !e.slab => t.large.push(e.size - self.large_pad),
                State::Dirty => t.dirty.push(e.size),
                State::Muzzy => t.muzzy.push(e.size),
                State::Retained => t.retained.push(e.size),
                State::Active | State::Unused => {}
            }
        }
        t
    }
}
