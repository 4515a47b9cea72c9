//! The running jemalloc's own description of its size classes, read through mallctl.

use super::ctl::{read_bool, read_string, read_u32, read_usize, Api};
use crate::sizeclass::AllocatorConfig;
use anyhow::Result;

/// Large classes above this are not read (there are classes up to 7 * 2^60; reading them all
/// proves nothing more).
pub const LARGE_CLASS_CAP: u64 = 1 << 40;

/// One small class as jemalloc reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveBin {
    pub size: u64,
    pub nregs: u64,
    pub slab_size: u64,
}

/// The running allocator's build parameters and class table.
#[derive(Clone, Debug)]
pub struct LiveBuild {
    pub version: String,
    pub page: u64,
    pub quantum: u64,
    pub cache_oblivious: bool,
    /// `opt.disable_large_size_classes` (false where the build has no such option).
    pub large_page_rounding: bool,
    pub bins: Vec<LiveBin>,
    /// How many large classes jemalloc has in all.
    pub nlextents: u64,
    /// Sizes of the large classes up to `LARGE_CLASS_CAP`.
    pub large: Vec<u64>,
    /// The build as the model takes it ([`Api::config`]: an unmodelled release is an error).
    config: AllocatorConfig,
}

impl LiveBuild {
    pub fn read() -> Result<Self> {
        let nbins = read_u32("arenas.nbins")?;
        let bins = (0..nbins)
            .map(|i| {
                let key = |field: &str| format!("arenas.bin.{i}.{field}");
                Ok(LiveBin {
                    size: read_usize(&key("size"))?,
                    nregs: u64::from(read_u32(&key("nregs"))?),
                    slab_size: read_usize(&key("slab_size"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let nlextents = u64::from(read_u32("arenas.nlextents")?);
        let mut large = Vec::new();
        for i in 0..nlextents {
            let size = read_usize(&format!("arenas.lextent.{i}.size"))?;
            if size > LARGE_CLASS_CAP {
                break;
            }
            large.push(size);
        }
        let version = read_string("version")?;
        Ok(LiveBuild {
            config: Api::linked().config()?,
            version,
            page: read_usize("arenas.page")?,
            quantum: read_usize("arenas.quantum")?,
            cache_oblivious: read_bool("opt.cache_oblivious")?,
            large_page_rounding: read_bool("opt.disable_large_size_classes").unwrap_or(false),
            bins,
            nlextents,
            large,
        })
    }

    /// The running allocator's build as a value ([`Api::config`] of the linked jemalloc).
    pub(crate) fn running_config() -> Result<AllocatorConfig> {
        Api::linked().config()
    }

    /// The model configuration this build was compiled with (read by [`Api::config`] in
    /// [`LiveBuild::read`]; a `Result` for the callers that chain it after the read).
    pub fn config(&self) -> Result<AllocatorConfig> {
        Ok(self.config)
    }
}
