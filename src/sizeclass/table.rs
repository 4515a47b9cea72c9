//! One derivation of every size class from (lg_base, lg_delta, ndelta), in the order and with
//! the rules of jemalloc 5.x's `src/sc.c`.

use super::config::{AllocatorConfig, ConfigError};
use serde::Serialize;

/// Small classes live in slabs of regions; large ones get their own page run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClassKind {
    Small,
    Large,
}

impl ClassKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ClassKind::Small => "small",
            ClassKind::Large => "large",
        }
    }
}

/// One size class. `size = 2^lg_base + ndelta * 2^lg_delta`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SizeClass {
    pub index: usize,
    pub size: u64,
    pub lg_base: u32,
    pub lg_delta: u32,
    pub ndelta: u64,
    pub kind: ClassKind,
    /// Bytes in one slab (small classes); 0 for large classes.
    pub slab_size: u64,
    /// Regions in one slab (small classes); 0 for large classes.
    pub nregs: u64,
}

/// Every size class of one build, smallest first.
#[derive(Clone, Debug)]
pub struct SizeClasses {
    config: AllocatorConfig,
    classes: Vec<SizeClass>,
    nbins: usize,
    /// Copied out of the table for the lookup's hot path.
    pub(super) lookup: Lookup,
}

/// The few numbers `usable_size` needs, kept together and free of indirection.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lookup {
    pub large_max: u64,
    /// The class spacing minus one (a mask) for requests in (2^(k-1), 2^k], indexed by
    /// 63 − k (the leading zeros of 2·request − 1).
    pub mask_by_leading_zeros: [u64; 64],
    pub page_mask: u64,
    /// Requests above this are rounded to whole pages (u64::MAX when none are).
    pub large_page_min: u64,
}

impl SizeClasses {
    /// Derives the classes of `config` (checked first).
    pub fn new(config: AllocatorConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let classes = derive(&config);
        let nbins = classes
            .iter()
            .take_while(|c| c.kind == ClassKind::Small)
            .count();
        let small_max = classes[..nbins].last().map_or(0, |c| c.size);
        let lookup = Lookup {
            large_max: classes.last().map_or(0, |c| c.size),
            mask_by_leading_zeros: std::array::from_fn(|leading_zeros| {
                let lg_ceil = 63 - leading_zeros as u32;
                let delta = if lg_ceil < config.lg_quantum {
                    // Tiny classes: powers of two from the smallest class up.
                    lg_ceil.max(config.lg_tiny_min)
                } else {
                    lg_ceil
                        .saturating_sub(config.lg_ngroup + 1)
                        .max(config.lg_quantum)
                };
                (1u64 << delta) - 1
            }),
            page_mask: config.page() - 1,
            large_page_min: if config.large_page_rounding {
                small_max
            } else {
                u64::MAX
            },
        };
        Ok(SizeClasses {
            config,
            classes,
            nbins,
            lookup,
        })
    }

    pub fn config(&self) -> &AllocatorConfig {
        &self.config
    }

    pub fn all(&self) -> &[SizeClass] {
        &self.classes
    }

    /// The small (slab) classes.
    pub fn bins(&self) -> &[SizeClass] {
        &self.classes[..self.nbins]
    }

    /// The large classes.
    pub fn large(&self) -> &[SizeClass] {
        &self.classes[self.nbins..]
    }

    pub fn small_maxclass(&self) -> u64 {
        self.bins().last().map_or(0, |c| c.size)
    }

    pub fn large_minclass(&self) -> u64 {
        self.large()[0].size
    }

    pub fn large_maxclass(&self) -> u64 {
        self.classes.last().map_or(0, |c| c.size)
    }

    /// The class that serves `size` bytes, by search over the table (the reference the fast
    /// arithmetic in [`SizeClasses::usable_size`] is tested against).
    pub fn class_for(&self, size: u64) -> Option<&SizeClass> {
        let size = size.max(1);
        let i = self.classes.partition_point(|c| c.size < size);
        self.classes.get(i)
    }
}

fn class(
    config: &AllocatorConfig,
    index: usize,
    lg_base: u32,
    lg_delta: u32,
    ndelta: u64,
) -> SizeClass {
    let size = (1u64 << lg_base) + (ndelta << lg_delta);
    let is_bin = size < 1u64 << (config.lg_page + config.lg_ngroup);
    let (slab_size, nregs) = if is_bin {
        let slab = slab_size(config.page(), size);
        (slab, slab / size)
    } else {
        (0, 0)
    };
    SizeClass {
        index,
        size,
        lg_base,
        lg_delta,
        ndelta,
        kind: if is_bin {
            ClassKind::Small
        } else {
            ClassKind::Large
        },
        slab_size,
        nregs,
    }
}

/// The smallest whole number of pages that `size` divides exactly: slabs waste nothing at the
/// end (jemalloc's `slab_size` loop, which stops at the least common multiple).
fn slab_size(page: u64, size: u64) -> u64 {
    let mut slab = page;
    while !slab.is_multiple_of(size) {
        slab += page;
    }
    slab
}

fn derive(config: &AllocatorConfig) -> Vec<SizeClass> {
    let ptr_bits = 8u32 << config.lg_ptr_size;
    let ngroup = config.ngroup();
    let mut classes = Vec::new();
    let mut push = |lg_base: u32, lg_delta: u32, ndelta: u64| {
        let index = classes.len();
        classes.push(class(config, index, lg_base, lg_delta, ndelta));
    };

    // Tiny classes: powers of two below the quantum.
    let mut lg_base = config.lg_tiny_min;
    let mut lg_delta = lg_base;
    let mut ndelta = 0;
    let mut any_tiny = false;
    while lg_base < config.lg_quantum {
        push(lg_base, lg_delta, 0);
        any_tiny = true;
        lg_delta = lg_base;
        lg_base += 1;
    }
    // The first quantum-spaced group; after tiny classes its first member is encoded as
    // (lg_base - 1) + 1 * delta, as sc.c does.
    if any_tiny {
        push(lg_base - 1, lg_delta, 1);
        lg_delta += 1;
        ndelta = 1;
    }
    while ndelta < ngroup {
        push(lg_base, lg_delta, ndelta);
        ndelta += 1;
    }
    // Every later doubling: ngroup classes spaced by 2^lg_delta; the very last group stops one
    // short so the largest class still fits in a signed pointer difference.
    lg_base += config.lg_ngroup;
    while lg_base < ptr_bits - 1 {
        let limit = if lg_base == ptr_bits - 2 {
            ngroup - 1
        } else {
            ngroup
        };
        for ndelta in 1..=limit {
            push(lg_base, lg_delta, ndelta);
        }
        lg_base += 1;
        lg_delta += 1;
    }
    classes
}
