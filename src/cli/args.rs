//! Arguments several commands share.

use crate::export::{write_atomic, Format, Table};
use crate::sizeclass::{AllocatorConfig, Preset, SizeClasses};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// Which jemalloc build to model.
#[derive(Args, Debug, Clone, Default)]
pub struct AllocatorArgs {
    /// A named build (`dev` is an alias of `5.3.1`).
    #[arg(long, value_enum, conflicts_with_all = ["lg_quantum", "lg_page", "lg_ngroup"])]
    pub preset: Option<Preset>,
    /// log2 of the quantum (default 4: 16 bytes).
    #[arg(long)]
    pub lg_quantum: Option<u32>,
    /// log2 of the page size (default 12: 4 KiB).
    #[arg(long)]
    pub lg_page: Option<u32>,
    /// log2 of the size classes per doubling (default 2).
    #[arg(long)]
    pub lg_ngroup: Option<u32>,
    /// Model a build configured with --disable-cache-oblivious (no padding page on large
    /// allocations).
    #[arg(long)]
    pub no_cache_oblivious: bool,
    /// Round large requests up to whole pages rather than to a large size class (jemalloc
    /// 5.3.1-dev's default `disable_large_size_classes`).
    #[arg(long)]
    pub large_page_rounding: bool,
}

impl AllocatorArgs {
    pub fn config(&self) -> Result<AllocatorConfig> {
        let mut config = self
            .preset
            .map_or_else(AllocatorConfig::default, Preset::config);
        if let Some(v) = self.lg_quantum {
            config.lg_quantum = v;
        }
        if let Some(v) = self.lg_page {
            config.lg_page = v;
        }
        if let Some(v) = self.lg_ngroup {
            config.lg_ngroup = v;
        }
        config.cache_oblivious &= !self.no_cache_oblivious;
        config.large_page_rounding |= self.large_page_rounding;
        config.validate()?;
        Ok(config)
    }

    /// The chosen build, or `None` when no option was given (use the running jemalloc's).
    pub fn explicit_config(&self) -> Result<Option<AllocatorConfig>> {
        let given = self.preset.is_some()
            || self.lg_quantum.is_some()
            || self.lg_page.is_some()
            || self.lg_ngroup.is_some()
            || self.no_cache_oblivious
            || self.large_page_rounding;
        given.then(|| self.config()).transpose()
    }

    pub fn classes(&self) -> Result<SizeClasses> {
        Ok(SizeClasses::new(self.config()?)?)
    }
}

/// Where and how to write a table.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// The table format.
    #[arg(long, value_enum, default_value_t = Format::Md)]
    pub format: Format,
    /// Write to this file (atomically) instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl OutputArgs {
    pub fn emit(&self, table: &Table) -> Result<()> {
        let text = self.format.render(table)?;
        match &self.out {
            Some(path) => write_atomic(path, text.as_bytes()),
            None => {
                use std::io::Write;
                let mut stdout = std::io::stdout().lock();
                // A closed pipe (`| head`) is not an error worth a message.
                let _ = stdout.write_all(text.as_bytes());
                Ok(())
            }
        }
    }
}
