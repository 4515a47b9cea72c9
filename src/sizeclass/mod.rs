//! jemalloc's size classes: the config, the derived table, and fast lookups into it.

use crate::export::Table;

mod config;
mod table;

pub use config::{AllocatorConfig, ConfigError, PRESETS};
pub use table::{ClassKind, SizeClass, SizeClasses};

impl SizeClasses {
    /// What `nallocx(request, 0)` answers: the usable size of the class serving `request`
    /// (a request of 0 is served as 1 byte), or `None` past the largest class.
    ///
    /// Arithmetic rather than a search: within a doubling the classes are evenly spaced, so
    /// rounding up to that spacing finds the class (jemalloc's `sz_s2u_compute`).
    #[inline]
    pub fn usable_size(&self, request: u64) -> Option<u64> {
        let c = &self.config();
        if request > self.large_maxclass() {
            return None;
        }
        let request = request.max(1);
        if c.large_page_rounding && request > self.small_maxclass() {
            let page_mask = c.page() - 1;
            return Some((request + page_mask) & !page_mask);
        }
        if request <= c.quantum() {
            return Some(request.next_power_of_two().max(1 << c.lg_tiny_min));
        }
        let lg_ceil = 64 - (request - 1).leading_zeros();
        let lg_delta = lg_ceil.saturating_sub(c.lg_ngroup + 1).max(c.lg_quantum);
        let mask = (1u64 << lg_delta) - 1;
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
    pub fn active_bytes_of(&self, requests: &[(u64, u64)]) -> Option<u64> {
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
        format!("jemalloc size classes, {}", classes.config().label()),
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
