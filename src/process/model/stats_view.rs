//! The model's statistics as `malloc_stats_print` reads them (`ctl.c`'s merge of every
//! initialized arena), for [`crate::process::stats_json`]; and the dump itself, which
//! allocates as the real one does.

use super::Process;
use crate::process::{ProcessError, ProcessOptions, ProcessStats};
use crate::sim::{BinStats, ExtentTally};
use crate::sizeclass::AllocatorConfig;

/// `malloc_stats_print`'s own buffer (`STATS_PRINT_BUFSIZE`, `buf_writer_init`): allocated
/// in arena 0 as internal memory, without a cache, before any statistic is read, and freed
/// after the dump.
pub const STATS_PRINT_BUFFER: u64 = 65536;

/// One initialized arena, as `stats.arenas.<i>.*` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArenaView {
    pub index: u32,
    /// Threads bound to it (`nthreads`: application bindings only).
    pub nthreads: u32,
    /// `dirty_decay_ms`, `muzzy_decay_ms` (the huge arena's as `arena_create_huge_arena`
    /// sets them).
    pub decay_ms: (i64, i64),
    pub active_bytes: u64,
    pub dirty_bytes: u64,
    pub muzzy_bytes: u64,
    pub retained_bytes: u64,
    pub small_allocated: u64,
    pub large_allocated: u64,
    /// `mapped`: active, dirty and muzzy extents plus the base's blocks.
    pub mapped_bytes: u64,
    pub tcache_bytes: u64,
    /// The base's allocated and resident bytes (`None`: no metadata model).
    pub base: Option<(u64, u64)>,
    /// Internal allocations (arena 0: the threads' cache blocks, the dump's buffer).
    pub internal: u64,
    pub bins: Vec<BinStats>,
    pub extents: ExtentTally,
}

/// Everything the model knows that a statistics dump prints.
#[derive(Clone, Debug)]
pub struct StatsView {
    pub config: AllocatorConfig,
    pub options: ProcessOptions,
    /// Automatic arenas (`opt.narenas`).
    pub narenas: u32,
    /// `arenas.narenas`: every arena index in use or reserved (the huge arena's included).
    pub arenas_total: u32,
    /// `arenas.tcache_max` (the largest cached class) and `arenas.nhbins`.
    pub tcache_maxclass: u64,
    pub nhbins: usize,
    pub totals: ProcessStats,
    /// Whether the bases are modelled (`stats.metadata`, `base`, `resident` then known).
    pub metadata: bool,
    pub arenas: Vec<ArenaView>,
}

impl Process {
    /// What `malloc_stats_print` would print now, without printing: the statistics as they
    /// are (see [`Process::malloc_stats_print`] for the dump's own allocation).
    pub(crate) fn stats_view(&self) -> StatsView {
        let arenas = (0..self.arenas.len())
            .filter(|&i| self.arenas[i].is_some() || self.imade[i])
            .map(|i| self.arena_view(i))
            .collect();
        StatsView {
            config: self.config,
            options: self.options.clone(),
            narenas: self.narenas,
            arenas_total: self.arenas.len() as u32 - u32::from(self.huge.is_none()),
            tcache_maxclass: self.info.maxclass,
            nhbins: self.info.nhbins(),
            totals: self.stats,
            metadata: self.meta.is_on(),
            arenas,
        }
    }

    /// A call of `malloc_stats_print` now: its 64 KiB buffer is allocated in arena 0
    /// (`STATS_PRINT_BUFFER`), the statistics are read, the buffer is freed (its pages
    /// then dirty, as in the real process). Returns what the dump reads.
    pub fn malloc_stats_print(&mut self) -> Result<StatsView, ProcessError> {
        let n = self.stats.events;
        let buffer = self.arena_mut(0).place(n, STATS_PRINT_BUFFER)?;
        self.print_buffer = STATS_PRINT_BUFFER;
        self.refresh_totals();
        let view = self.stats_view();
        self.arena_mut(0).remove(buffer);
        self.print_buffer = 0;
        self.refresh_totals();
        Ok(view)
    }

    fn arena_view(&self, i: usize) -> ArenaView {
        let sets = self.arenas[i].as_ref().map(|a| a.page_sets());
        let sets = sets.unwrap_or_default();
        let base = self.meta.base(i);
        let mut v = ArenaView {
            index: i as u32,
            nthreads: self.nthreads.get(i).copied().unwrap_or(0),
            decay_ms: match Some(i as u32) == self.huge {
                true => self.options.huge_decay_ms(),
                false => (self.options.dirty_decay_ms, self.options.muzzy_decay_ms),
            },
            dirty_bytes: sets.dirty_bytes,
            muzzy_bytes: sets.muzzy_bytes,
            retained_bytes: sets.retained_bytes,
            // As `Process::snapshot`: without a metadata model, one base block per arena.
            mapped_bytes: sets.dirty_bytes
                + sets.muzzy_bytes
                + match self.meta.is_on() {
                    true => base.map_or(0, |b| b.mapped),
                    false => crate::process::BASE_BLOCK_BYTES,
                },
            tcache_bytes: self.tcache_bytes.get(i).copied().unwrap_or(0),
            base: base.map(|b| (b.allocated, b.resident)),
            internal: match i {
                0 => self.internal_bytes(),
                _ => 0,
            },
            ..ArenaView::default()
        };
        if let Some(a) = &self.arenas[i] {
            let s = a.stats();
            v.bins = a.bins();
            v.small_allocated = v
                .bins
                .iter()
                .zip(a.classes().bins())
                .map(|(b, c)| b.curregs * c.size)
                .sum();
            v.large_allocated = s.allocated_bytes - v.small_allocated;
            v.active_bytes = s.active_bytes;
            v.mapped_bytes += s.active_bytes;
            v.extents = a.extent_tally();
        }
        v
    }
}

/// When a replay dumps its statistics: after an event (calls and thread exits, from 1), or
/// after the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpAt {
    Event(u64),
    End,
}
