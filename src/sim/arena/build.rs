//! A fresh arena of a build: its page allocator's rules, its bins, and the size-to-bin table
//! every model of the same bins shares.

use super::super::pac::{Pac, Rules};
use super::super::ph::{Heap, NIL};
use super::super::{ArenaStats, BinStats, SimError};
use super::{ArenaModel, Bin, BinTable, BIN_TABLE_LEN};
use crate::sizeclass::{AllocatorConfig, JemallocVersion, PageSizeClasses, SizeClasses};
use std::sync::{Arc, Mutex, PoisonError};

/// Size-to-bin tables built so far, by their bins' sizes (which alone decide a table), most
/// recent last. A table is 64 KiB and ~157K instructions to build: a what-if or a process
/// model builds many models of few builds. Bounded, in case a caller sweeps many builds.
static BIN_TABLES: Mutex<Vec<(Vec<u64>, Arc<BinTable>)>> = Mutex::new(Vec::new());
const BIN_TABLES_KEPT: usize = 16;

impl ArenaModel {
    pub(super) fn with_bin_heap(
        config: AllocatorConfig,
        heap: Heap,
    ) -> Result<ArenaModel, SimError> {
        let classes = SizeClasses::new(config).map_err(|e| SimError::Config(e.to_string()))?;
        let rules = rules(config)?;
        let psz = PageSizeClasses::new(&classes);
        let large_pad = psz.large_pad();
        let pac = Pac::new(
            psz,
            rules,
            classes.large_minclass(),
            classes.large_maxclass(),
            config.lg_quantum,
            config.lg_ngroup,
        );
        let nbins = classes.bins().len();
        if nbins > 254 {
            return Err(SimError::Config(format!(
                "{nbins} small size classes (the model handles up to 254)"
            )));
        }
        let small_max = classes.small_maxclass();
        // The size-to-bin table's reach (see `BIN_TABLE_LEN`): the fast path relies on it.
        if small_max >= 1 << 19 {
            return Err(SimError::Config(format!(
                "small sizes up to {small_max} bytes (the model handles below 512 KiB)"
            )));
        }
        Ok(ArenaModel {
            big_requests: Default::default(),
            aligns: Default::default(),
            bin_of: shared_bin_table(&classes),
            small_max,
            nbins,
            bins: fresh_bins(&classes, heap),
            pac,
            objects: Vec::new(),
            stats: ArenaStats::default(),
            allocs: 0,
            frees: 0,
            others: 0,
            page: config.page(),
            large_pad,
            classes,
            decay: None,
        })
    }
}

/// The page allocator's rules of a build's version.
fn rules(config: AllocatorConfig) -> Result<Rules, SimError> {
    Ok(match config.version {
        JemallocVersion::V5_3_1 => Rules {
            batch_tail: config.large_page_rounding,
            enumerate_below: config.large_page_rounding,
            cap_dirty_merge: true,
            grow_start: 2 << 20,
        },
        JemallocVersion::V5_3_0 => {
            if config.large_page_rounding {
                return Err(SimError::Config(
                    "jemalloc 5.3.0 has no disable_large_size_classes (large page rounding)".into(),
                ));
            }
            Rules {
                batch_tail: false,
                enumerate_below: false,
                cap_dirty_merge: false,
                // HUGEPAGE on x86-64.
                grow_start: 2 << 20,
            }
        }
    })
}

/// Empty bins of the build's classes (the first `nbins`; the rest unused), with `heap`'s rule.
fn fresh_bins(classes: &SizeClasses, heap: Heap) -> [Bin; 256] {
    let unused = Bin {
        cur: NIL,
        nonfull: heap,
        size: 0,
        nregs: 0,
        slab_size: 0,
        stats: BinStats::default(),
    };
    let mut bins = [unused; 256];
    for (bin, c) in bins.iter_mut().zip(classes.bins()) {
        *bin = Bin {
            size: c.size,
            nregs: c.nregs as u32,
            slab_size: c.slab_size,
            ..unused
        };
    }
    bins
}

/// The size-to-bin table of `classes`' bins: the one built before for the same bins, else a
/// new one (kept for the next model).
fn shared_bin_table(classes: &SizeClasses) -> Arc<BinTable> {
    let sizes: Vec<u64> = classes.bins().iter().map(|c| c.size).collect();
    // A panic elsewhere cannot leave a table half built (tables go in whole): go on.
    let mut tables = BIN_TABLES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, table)) = tables.iter().find(|(s, _)| *s == sizes) {
        return Arc::clone(table);
    }
    // Built in a zeroed heap block, moved into the shared one once.
    let table: Arc<BinTable> = Arc::from(bin_table(&sizes));
    if tables.len() == BIN_TABLES_KEPT {
        tables.remove(0);
    }
    tables.push((sizes, Arc::clone(&table)));
    table
}

/// One pass over the bins' sizes (they ascend): entry 0 serves size 0, entry i > 0 sizes
/// 8i-7 ..= 8i; the entries past the small sizes are never read.
fn bin_table(sizes: &[u64]) -> Box<BinTable> {
    let mut bin_of: Box<BinTable> = vec![0u8; BIN_TABLE_LEN]
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| unreachable!("a slice of the table's length"));
    let mut start = 0;
    for (b, size) in sizes.iter().enumerate() {
        let end = size.div_ceil(8) as usize + 1;
        bin_of[start..end].fill(b as u8);
        start = end;
    }
    bin_of
}
