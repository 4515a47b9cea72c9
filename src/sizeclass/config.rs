//! The handful of build parameters jemalloc derives every size class from.

use serde::{Deserialize, Serialize};

/// A jemalloc build, as far as size classes are concerned.
///
/// jemalloc fixes these when it is compiled (`--with-lg-quantum`, `--with-lg-page`,
/// `--disable-cache-oblivious`); `lg_ngroup` is 2 in every released build (`sc_data_init`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocatorConfig {
    /// log2 of the quantum, the spacing of the smallest non-tiny classes (default 4: 16 bytes).
    pub lg_quantum: u32,
    /// log2 of the page size (default 12: 4 KiB).
    pub lg_page: u32,
    /// log2 of the number of classes per doubling (default 2: four classes per doubling).
    pub lg_ngroup: u32,
    /// log2 of the smallest (tiny) class (3: 8 bytes).
    pub lg_tiny_min: u32,
    /// log2 of the pointer size in bytes (3 on 64-bit targets).
    pub lg_ptr_size: u32,
    /// Large allocations get one extra page so their start can be randomised within it.
    pub cache_oblivious: bool,
    /// Large requests are rounded up to whole pages instead of to a large size class:
    /// jemalloc 5.3.1's `opt.disable_large_size_classes` (on by default there; absent,
    /// i.e. off, in the 5.3.0 release). The class table itself is unchanged.
    pub large_page_rounding: bool,
    /// Which jemalloc release's arena behaviour (page allocator, growth) to model. Size
    /// classes are the same in both; the arena simulator differs.
    pub version: JemallocVersion,
}

/// jemalloc releases whose arena behaviour fragsim models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum JemallocVersion {
    /// 5.3.0 (Debian's `libjemalloc2`): growth starts at the huge-page size.
    #[default]
    #[serde(rename = "5.3.0")]
    V5_3_0,
    /// 5.3.1 (bundled by tikv-jemalloc-sys 0.7): growth from 2 MiB, tail batching, and the
    /// pairing-heap first fit that also looks one class below.
    #[serde(rename = "5.3.1")]
    V5_3_1,
}

impl JemallocVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            JemallocVersion::V5_3_0 => "5.3.0",
            JemallocVersion::V5_3_1 => "5.3.1",
        }
    }

    /// The release a `version` mallctl string names (e.g. `5.3.1-0-g81034ce1...`).
    pub(crate) fn from_version_string(text: &str) -> Option<Self> {
        if text.starts_with("5.3.0") {
            Some(JemallocVersion::V5_3_0)
        } else if text.starts_with("5.3.1") {
            Some(JemallocVersion::V5_3_1)
        } else {
            None
        }
    }
}

/// jemalloc's limit on small classes: `size2index_tab` stores bin indices as `uint8_t`, and
/// sc.h stops the build (`#error "Too many small size classes"`) when `SC_NBINS > 256`.
pub const MAX_SMALL_CLASSES: u64 = 256;

/// Why a configuration cannot describe a jemalloc build.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("unknown preset '{0}' (known: {known})", known = super::Preset::names())]
    UnknownPreset(String),
    #[error("impossible allocator configuration: {0}")]
    Impossible(String),
}

impl Default for AllocatorConfig {
    fn default() -> Self {
        AllocatorConfig {
            lg_quantum: 4,
            lg_page: 12,
            lg_ngroup: 2,
            lg_tiny_min: 3,
            lg_ptr_size: 3,
            cache_oblivious: true,
            large_page_rounding: false,
            version: JemallocVersion::V5_3_0,
        }
    }
}

impl AllocatorConfig {
    /// The build named `name`: a [`Preset`](super::Preset) name or alias.
    pub fn preset(name: &str) -> Result<Self, ConfigError> {
        Ok(super::Preset::from_name(name)?.config())
    }

    /// A configuration with the given parameters, checked.
    pub fn new(lg_quantum: u32, lg_page: u32, lg_ngroup: u32) -> Result<Self, ConfigError> {
        let config = AllocatorConfig {
            lg_quantum,
            lg_page,
            lg_ngroup,
            ..AllocatorConfig::default()
        };
        config.validate()?;
        Ok(config)
    }

    pub fn quantum(&self) -> u64 {
        1 << self.lg_quantum
    }

    pub fn page(&self) -> u64 {
        1 << self.lg_page
    }

    pub(crate) fn ngroup(&self) -> u64 {
        1 << self.lg_ngroup
    }

    /// Rejects parameter sets no jemalloc build can have (jemalloc's configure script and
    /// static asserts enforce the same bounds).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |msg: String| Err(ConfigError::Impossible(msg));
        if self.lg_ptr_size != 3 {
            return bad(format!(
                "lg_ptr_size={} (only 64-bit pointers are modelled)",
                self.lg_ptr_size
            ));
        }
        if self.lg_tiny_min != 3 {
            return bad(format!(
                "lg_tiny_min={} (jemalloc fixes it at 3)",
                self.lg_tiny_min
            ));
        }
        if !(3..=8).contains(&self.lg_quantum) {
            return bad(format!(
                "lg_quantum={} (must be 3..=8: the quantum is 8 to 256 bytes)",
                self.lg_quantum
            ));
        }
        if !(12..=21).contains(&self.lg_page) {
            return bad(format!(
                "lg_page={} (must be 12..=21: pages of 4 KiB to 2 MiB)",
                self.lg_page
            ));
        }
        if self.lg_page < self.lg_quantum {
            return bad(format!(
                "lg_page={} is below lg_quantum={}",
                self.lg_page, self.lg_quantum
            ));
        }
        if !(1..=4).contains(&self.lg_ngroup) {
            return bad(format!(
                "lg_ngroup={} (must be 1..=4; every jemalloc release uses 2)",
                self.lg_ngroup
            ));
        }
        let nbins = self.small_class_count();
        if nbins > MAX_SMALL_CLASSES {
            return bad(format!(
                "lg_quantum={} lg_page={} lg_ngroup={} gives {nbins} small size classes \
                 (jemalloc allows at most {MAX_SMALL_CLASSES})",
                self.lg_quantum, self.lg_page, self.lg_ngroup
            ));
        }
        Ok(())
    }

    /// How many small (slab) classes the build has: jemalloc's `SC_NBINS` (sc.h), the tiny
    /// classes below the quantum, one pseudo-group of `ngroup` classes, and `ngroup` per
    /// doubling up to `ngroup` pages, less the last class, which is `ngroup` pages exactly.
    pub fn small_class_count(&self) -> u64 {
        let tiny = u64::from(self.lg_quantum.saturating_sub(self.lg_tiny_min));
        let doublings = u64::from((self.lg_page + 1).saturating_sub(self.lg_quantum));
        tiny + self.ngroup() * doublings - 1
    }

    /// A short label, e.g. `q16-p4096`.
    pub fn label(&self) -> String {
        let mut label = format!("q{}-p{}", self.quantum(), self.page());
        if self.lg_ngroup != 2 {
            label.push_str(&format!("-g{}", self.ngroup()));
        }
        if !self.cache_oblivious {
            label.push_str("-nco");
        }
        if self.large_page_rounding {
            label.push_str("-lpages");
        }
        if self.version != JemallocVersion::V5_3_0 {
            label.push_str(&format!("-v{}", self.version.as_str()));
        }
        label
    }
}
