//! jemalloc's size classes: the config, the derived table, and fast lookups into it.

use crate::export::Table;
use std::hint::select_unpredictable;

mod batch;
mod config;
mod preset;
mod psz;
mod table;

pub use batch::LaneWidth;
pub use config::AllocatorConfig;
pub use config::ConfigError;
pub use config::JemallocVersion;
pub use preset::build_name;
pub(crate) use preset::build_title;
pub use preset::Preset;
pub use psz::PageSizeClasses;
pub use table::ClassKind;
pub use table::SizeClasses;

impl SizeClasses {
    /// What `nallocx(request, 0)` answers: the usable size of the class serving `request`
    /// (a request of 0 is served as 1 byte), or `None` past the largest class.
    ///
    /// Arithmetic rather than a search: within a doubling the classes are evenly spaced, so
    /// rounding up to that spacing finds the class (jemalloc's `sz_s2u_compute`). Written to
    /// compile to conditional moves: request sizes are unpredictable branches.
    #[inline]
    pub fn usable_size(&self, request: u64) -> Option<u64> {
        let l = &self.lookup;
        if request > l.large_max {
            return None;
        }
        let request = request.max(1);
        // Every class is the request rounded up to 2^lg_delta, and lg_delta depends only on
        // the request's doubling, ceil(log2(request)) = floor(log2(2·request − 1)) = 63 − the
        // leading zeros of 2·request − 1 (odd, so `leading_zeros` needs no zero check). The
        // mask is read from a 64-entry table derived from the config, indexed by those
        // leading zeros. Branch-free: request sizes are unpredictable.
        let mask = l.mask_by_leading_zeros[((2 * request - 1) | 1).leading_zeros() as usize];
        // 5.3.1 rounds large requests to whole pages.
        let mask = select_unpredictable(request > l.large_page_min, l.page_mask, mask);
        Some((request + mask) & !mask)
    }

    /// Bytes of pages one allocation of `request` bytes keeps active: for a small class its
    /// share of a slab (slabs are exact multiples of the class, so this is the class size);
    /// for a large class its pages plus, in a cache-oblivious build, one page of padding.
    pub fn active_bytes(&self, request: u64) -> Option<u64> {
        let usable = self.usable_size(request)?;
        Some(usable + self.large_pad(usable))
    }

    /// The padding page a cache-oblivious build adds to each large allocation.
    fn large_pad(&self, usable: u64) -> u64 {
        if usable > self.small_maxclass() && self.config().cache_oblivious {
            self.config().page()
        } else {
            0
        }
    }

    /// Bytes of pages that `count` live allocations of `request` bytes keep active in an
    /// otherwise empty arena: whole slabs for small classes, runs of pages for large ones.
    pub fn active_bytes_for(&self, request: u64, count: u64) -> Option<u64> {
        let usable = self.usable_size(request)?;
        if usable <= self.small_maxclass() {
            let class = self.class_for(usable)?;
            let slabs = count.div_ceil(class.nregs);
            Some(slabs * class.slab_size)
        } else {
            Some((usable + self.large_pad(usable)) * count)
        }
    }

    /// Active bytes of a mix of live allocations, `(request, count)` pairs, in an otherwise
    /// empty arena: requests of one class share slabs, so they are counted per class first.
    pub(crate) fn active_bytes_of(&self, requests: &[(u64, u64)]) -> Option<u64> {
        let mut per_class: std::collections::BTreeMap<u64, u64> = Default::default();
        for &(request, count) in requests {
            *per_class.entry(self.usable_size(request)?).or_default() += count;
        }
        per_class
            .into_iter()
            .map(|(class, count)| self.active_bytes_for(class, count))
            .sum()
    }

    /// Whether `request` is served from a slab.
    pub fn is_small(&self, request: u64) -> bool {
        request <= self.small_maxclass()
    }
}

/// The class table (columns begin `index,size,kind,slab_size,nregs`).
pub fn class_table(classes: &SizeClasses) -> Table {
    let mut table = Table::new(
        format!("size classes of {}", build_title(classes.config())),
        &[
            "index",
            "size",
            "kind",
            "slab_size",
            "nregs",
            "lg_base",
            "lg_delta",
            "ndelta",
        ],
    );
    for c in classes.all() {
        table.push(vec![
            (c.index as u64).into(),
            c.size.into(),
            c.kind.as_str().into(),
            c.slab_size.into(),
            c.nregs.into(),
            u64::from(c.lg_base).into(),
            u64::from(c.lg_delta).into(),
            c.ndelta.into(),
        ]);
    }
    table
}
