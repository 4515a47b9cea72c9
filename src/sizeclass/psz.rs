//! Page-size classes: the size classes that are whole multiples of the page, which jemalloc's
//! page allocator uses to file free extents (`sz_psz2ind`, `sz_pind2sz`,
//! `sz_psz_quantize_floor/ceil` in jemalloc's `sz.h` / `sz.c`).

use super::SizeClasses;

/// The page-size classes of one build, and the quantisation the extent sets use.
#[derive(Clone, Debug)]
pub struct PageSizeClasses {
    lg_page: u32,
    lg_ngroup: u32,
    /// `sz_pind2sz_tab`: every class that is a page multiple, then one past-the-end entry
    /// (`large_maxclass + page`) at index `npsizes`.
    pind2sz: Vec<u64>,
    large_max: u64,
    /// `sz_large_pad`: one page when the build is cache-oblivious.
    large_pad: u64,
}

impl PageSizeClasses {
    pub fn new(classes: &SizeClasses) -> Self {
        let config = classes.config();
        let page = config.page();
        let large_max = classes.large_maxclass();
        let mut pind2sz: Vec<u64> = classes
            .all()
            .iter()
            .map(|c| c.size)
            .filter(|size| size % page == 0)
            .collect();
        pind2sz.push(large_max + page);
        PageSizeClasses {
            lg_page: config.lg_page,
            lg_ngroup: config.lg_ngroup,
            pind2sz,
            large_max,
            large_pad: if config.cache_oblivious { page } else { 0 },
        }
    }

    /// `SC_NPSIZES`: how many page-size classes there are.
    pub(crate) fn npsizes(&self) -> usize {
        self.pind2sz.len() - 1
    }

    pub fn large_pad(&self) -> u64 {
        self.large_pad
    }

    /// `sz_pind2sz`: the size of page-size class `pind` (`npsizes` gives `large_max + page`).
    pub fn pind2sz(&self, pind: usize) -> u64 {
        self.pind2sz[pind.min(self.npsizes())]
    }

    /// `sz_psz2ind`: the smallest page-size class of at least `psz` bytes, by jemalloc's
    /// arithmetic (not a search), `npsizes` past the largest class.
    pub fn psz2ind(&self, psz: u64) -> usize {
        if psz > self.large_max {
            return self.npsizes();
        }
        let psz = psz.max(1);
        let x = 64 - (psz - 1).leading_zeros(); // lg_ceil(psz)
        let first = self.lg_ngroup + self.lg_page;
        let off_to_first_group = x.saturating_sub(first);
        let lg_delta = if off_to_first_group == 0 {
            self.lg_page
        } else {
            self.lg_page + off_to_first_group - 1
        };
        let inner = ((psz - 1) >> lg_delta) & ((1 << self.lg_ngroup) - 1);
        ((off_to_first_group << self.lg_ngroup) as u64 + inner) as usize
    }

    /// `sz_psz_quantize_floor`: the largest class size (plus the pad) not above `size`; an
    /// extent of `size` bytes is filed under `psz2ind` of this.
    pub(crate) fn quantize_floor(&self, size: u64) -> u64 {
        let pind = self.psz2ind(size - self.large_pad + 1);
        if pind == 0 {
            return size;
        }
        self.pind2sz(pind - 1) + self.large_pad
    }

    /// `sz_psz_quantize_ceil`: the smallest class size (plus the pad) not below `size`; a
    /// request of `size` bytes searches from `psz2ind` of this up.
    pub(crate) fn quantize_ceil(&self, size: u64) -> u64 {
        let floor = self.quantize_floor(size);
        if floor < size {
            self.pind2sz(self.psz2ind(floor - self.large_pad + 1)) + self.large_pad
        } else {
            floor
        }
    }

    /// The index an extent of `size` bytes is filed under in an extent set.
    pub(crate) fn extent_index(&self, size: u64) -> usize {
        self.psz2ind(self.quantize_floor(size))
    }

    /// The first index a first-fit for `size` bytes searches.
    pub(crate) fn request_index(&self, size: u64) -> usize {
        self.psz2ind(self.quantize_ceil(size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizeclass::AllocatorConfig;

    fn psz() -> PageSizeClasses {
        PageSizeClasses::new(&SizeClasses::new(AllocatorConfig::default()).unwrap())
    }

    #[test]
    fn psz2ind_inverts_pind2sz() {
        let p = psz();
        for pind in 0..p.npsizes() {
            let size = p.pind2sz(pind);
            assert_eq!(p.psz2ind(size), pind, "size {size}");
            // One byte more needs the next class (sz_psz2ind rounds up).
            assert_eq!(p.psz2ind(size + 1), pind + 1, "size {size}+1");
        }
    }

    #[test]
    fn first_classes_are_page_spaced() {
        // Hand-derived from sc.c with 4 KiB pages: 4, 8, 12, 16 KiB, then 20, 24, 28, 32 KiB,
        // then 40, 48, 56, 64 KiB.
        let p = psz();
        let kib: Vec<u64> = (0..12).map(|i| p.pind2sz(i) / 1024).collect();
        assert_eq!(kib, [4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64]);
    }

    #[test]
    fn quantize_with_the_pad() {
        // Cache-oblivious: sizes are classes plus one 4 KiB page. 36 KiB = 32 + 4 is exact;
        // 40 KiB lies between 36 and 44 (= 40 + 4).
        let p = psz();
        assert_eq!(p.quantize_floor(36 << 10), 36 << 10);
        assert_eq!(p.quantize_ceil(36 << 10), 36 << 10);
        assert_eq!(p.quantize_floor(40 << 10), 36 << 10);
        assert_eq!(p.quantize_ceil(40 << 10), 44 << 10);
        assert_eq!(p.quantize_floor(4 << 10), 4 << 10);
    }
}
