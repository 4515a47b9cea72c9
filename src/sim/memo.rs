//! A memo of the page allocator's extent-set indices by size (`sz_psz2ind` of the
//! quantised size), so each size's quantisation is computed once.

use crate::sizeclass::PageSizeClasses;

/// Page-size class indices by size in pages: `extent_index + 1` in the low half,
/// `request_index + 1` in the high half, 0 while not yet computed.
pub(crate) struct IndexMemo {
    lg_page: u32,
    by_pages: Vec<u32>,
}

/// Sizes the memo covers: up to 4 MiB in 4 KiB pages (a 4 KiB table; larger sizes are
/// computed each time).
const MEMO_PAGES: usize = 1024;

impl IndexMemo {
    pub fn new(lg_page: u32) -> Self {
        IndexMemo {
            lg_page,
            by_pages: vec![0; MEMO_PAGES],
        }
    }

    #[inline]
    pub fn get(&mut self, psz: &PageSizeClasses, size: u64, request: bool) -> usize {
        let pages = (size >> self.lg_page) as usize;
        let exact = (pages as u64) << self.lg_page == size;
        match self.by_pages.get_mut(pages) {
            Some(cell) if exact => {
                let shift = if request { 16 } else { 0 };
                let v = (*cell >> shift) & 0xffff;
                if v != 0 {
                    return v as usize - 1;
                }
                let i = Self::compute(psz, size, request);
                *cell |= (i as u32 + 1) << shift;
                i
            }
            _ => Self::compute(psz, size, request),
        }
    }

    #[cold]
    fn compute(psz: &PageSizeClasses, size: u64, request: bool) -> usize {
        if request {
            psz.request_index(size)
        } else {
            psz.extent_index(size)
        }
    }
}
