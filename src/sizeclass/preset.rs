//! Named builds: each preset's name, description and configuration in one place.

use super::config::{AllocatorConfig, ConfigError, JemallocVersion};
use super::table::SizeClasses;
use serde::Serialize;

/// A named jemalloc build. The command line's `--preset` values, their help text, and the
/// configurations the report models all come from here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Preset {
    /// jemalloc 5.3.0 on x86-64 with its defaults (`default` is an alias).
    V5_3_0,
    /// An 8-byte quantum (`--with-lg-quantum=3`).
    Quantum8,
    /// 16 KiB pages (`--with-lg-page=14`).
    Page16k,
    /// 64 KiB pages (`--with-lg-page=16`), also on a 4 KiB-page kernel.
    Page64k,
    /// The jemalloc 5.3.1 that tikv-jemalloc-sys 0.7 bundles (`dev` is an alias).
    V5_3_1,
    /// Redis 7's bundled jemalloc 5.3.0 (`--with-lg-quantum=3 --disable-cache-oblivious`).
    Redis,
}

impl Preset {
    /// The build fragsim links (tikv-jemalloc-sys 0.7's jemalloc 5.3.1): the default of every
    /// command, and of the report's sections that model one build.
    pub(crate) const LINKED: Preset = Preset::V5_3_1;

    pub const ALL: [Preset; 6] = [
        Preset::V5_3_0,
        Preset::Quantum8,
        Preset::Page16k,
        Preset::Page64k,
        Preset::V5_3_1,
        Preset::Redis,
    ];

    /// The name `--preset` takes.
    pub fn name(self) -> &'static str {
        match self {
            Preset::V5_3_0 => "5.3.0",
            Preset::Quantum8 => "quantum8",
            Preset::Page16k => "page16k",
            Preset::Page64k => "page64k",
            Preset::V5_3_1 => "5.3.1",
            Preset::Redis => "redis",
        }
    }

    /// Other names `--preset` accepts for this build.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Preset::V5_3_1 => &["dev"],
            Preset::V5_3_0 => &["default"],
            _ => &[],
        }
    }

    /// One line on what the build is (the `--preset` help and the report's index).
    pub(crate) fn description(self) -> &'static str {
        match self {
            Preset::V5_3_0 => {
                "jemalloc 5.3.0's defaults (Debian's libjemalloc2): 16 B quantum, 4 KiB pages, large size classes; `default` is an alias, from before 5.3.1 became the linked build"
            }
            Preset::Quantum8 => "8 B quantum (the build the seed's figures match)",
            Preset::Page16k => "16 KiB pages (--with-lg-page=14, e.g. Apple silicon)",
            Preset::Page64k => {
                "jemalloc 5.3.0 with 64 KiB pages (--with-lg-page=16, as arm64 server packages build it; 5.3.1's aarch64 default), live-checked on a 4 KiB-page kernel with scripts/build-jemalloc.sh page64k"
            }
            Preset::V5_3_1 => {
                "jemalloc 5.3.1 as tikv-jemalloc-sys ships it: large requests rounded to pages"
            }
            Preset::Redis => {
                "Redis 7's bundled jemalloc 5.3.0: 8 B quantum, no cache-oblivious padding page (--with-lg-quantum=3 --disable-cache-oblivious, redis deps/Makefile)"
            }
        }
    }

    pub fn config(self) -> AllocatorConfig {
        let base = AllocatorConfig::default();
        match self {
            Preset::V5_3_0 => base,
            Preset::Quantum8 => AllocatorConfig {
                lg_quantum: 3,
                ..base
            },
            Preset::Page16k => AllocatorConfig {
                lg_page: 14,
                ..base
            },
            Preset::Page64k => AllocatorConfig {
                lg_page: 16,
                ..base
            },
            Preset::V5_3_1 => AllocatorConfig {
                large_page_rounding: true,
                version: JemallocVersion::V5_3_1,
                ..base
            },
            Preset::Redis => AllocatorConfig {
                lg_quantum: 3,
                cache_oblivious: false,
                ..base
            },
        }
    }

    /// The build's size classes (every preset is a valid build; a test checks it).
    pub fn classes(self) -> SizeClasses {
        SizeClasses::new(self.config()).expect("every preset is a valid build")
    }

    /// The preset called `name` (or one of its aliases).
    pub fn from_name(name: &str) -> Result<Self, ConfigError> {
        crate::choice::find(name).ok_or_else(|| ConfigError::UnknownPreset(name.to_string()))
    }

    /// Every preset name, comma-separated (for error messages).
    pub fn names() -> String {
        crate::choice::names::<Preset>()
    }
}

/// The one name of a build everywhere (titles, timeline `build` column, errors): the preset's
/// name when the build is one (`5.3.0`, `5.3.1`), else its label (`q8-p4096-lpages-v5.3.1`).
pub fn build_name(config: &AllocatorConfig) -> String {
    Preset::ALL
        .into_iter()
        .find(|p| p.config() == *config)
        .map_or_else(|| config.label(), |p| p.name().to_string())
}

/// [`build_name`] with the jemalloc release, for titles: `jemalloc 5.3.1`,
/// `redis (jemalloc 5.3.0)`, `q8-p4096 (jemalloc 5.3.0)`.
pub fn build_title(config: &AllocatorConfig) -> String {
    let name = build_name(config);
    let version = config.version.as_str();
    if name == version {
        format!("jemalloc {name}")
    } else {
        format!("{name} (jemalloc {version})")
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Preset {
    type Err = ConfigError;

    fn from_str(name: &str) -> Result<Self, ConfigError> {
        Preset::from_name(name)
    }
}

impl crate::choice::Choice for Preset {
    fn all() -> &'static [Self] {
        &Preset::ALL
    }

    fn name(self) -> &'static str {
        Preset::name(self)
    }

    fn aliases(self) -> &'static [&'static str] {
        Preset::aliases(self)
    }

    fn help(self) -> &'static str {
        self.description()
    }
}
