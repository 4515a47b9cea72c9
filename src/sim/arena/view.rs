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
    pub fn extent_view(&self, extent: u32) -> Option<ExtentView> {
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
