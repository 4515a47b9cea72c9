//! A whole trace through the process model (`fragsim replay TRACE --process`) as an
//! [`engine`](crate::engine) consumer: the summary, and the per-arena and timeline rows every
//! K records (calls and thread exits) and after the last. Several runs (seeds) are several
//! consumers of one engine pass.

use super::{
    DecayClock, Metadata, Process, ProcessError, ProcessOptions, ProcessStats, ProcessSummary,
    StatsView,
};
use crate::engine::RecordConsumer;
use crate::export::{Cell, Table};
use crate::sizeclass::AllocatorConfig;
use crate::trace::Record;

/// The per-arena and timeline tables of one run.
pub struct ProcessRows {
    pub per_arena: Table,
    pub timeline: Table,
}

impl ProcessRows {
    /// Empty tables for the trace called `name`.
    pub fn new(name: &str) -> Self {
        ProcessRows {
            per_arena: Table::new(
                format!("per arena, {name}"),
                &[
                    "event",
                    "arena",
                    "allocated_bytes",
                    "active_bytes",
                    "tcache_bytes",
                ],
            ),
            timeline: Table::new(
                format!("process timeline of {name}"),
                &[
                    "event",
                    "live_objects",
                    "requested_bytes",
                    "allocated_bytes",
                    "active_bytes",
                    "tcache_bytes",
                    "time_ns",
                    "resident_bytes",
                    "dirty_bytes",
                    "muzzy_bytes",
                    "retained_bytes",
                    "mapped_bytes",
                ],
            ),
        }
    }

    fn push(&mut self, n: u64, model: &Process) {
        for a in model.snapshot().arenas {
            self.per_arena.push(vec![
                n.into(),
                u64::from(a.index).into(),
                a.allocated_bytes.into(),
                a.active_bytes.into(),
                a.tcache_bytes.into(),
            ]);
        }
        let s = model.stats();
        self.timeline.push(
            [
                n,
                s.live_objects,
                s.requested_bytes,
                s.allocated_bytes,
                s.active_bytes,
                s.tcache_bytes,
                s.time_ns,
                s.resident_bytes,
                s.dirty_bytes,
                s.muzzy_bytes,
                s.retained_bytes,
                s.mapped_bytes,
            ]
            .into_iter()
            .map(Cell::Int)
            .collect(),
        );
    }
}

/// One process-model run: the model (its measured metadata and decay clock set), its peaks,
/// and the rows if asked for.
pub struct ProcessRun {
    model: Process,
    summary: ProcessSummary,
    rows: Option<ProcessRows>,
    every: u64,
    records: u64,
    /// The event after which to dump the statistics ([`ProcessRun::dump_at`]), and the dump.
    dump_at: Option<u64>,
    dump: Option<StatsView>,
    /// The rows after the last record are in (a dump at the end pushes them first).
    tail_pushed: bool,
}

/// What a finished run gives: its summary, the rows if asked for, `narenas`, the thread
/// cache block's size, and the statistics dump if one was asked for and made.
pub struct ProcessRunResult {
    pub summary: ProcessSummary,
    pub rows: Option<ProcessRows>,
    pub narenas: u32,
    pub cache_block_bytes: u64,
    pub stats: Option<StatsView>,
}

impl ProcessRun {
    /// The metadata start of a jemalloc built for `bits` address bits
    /// (`Metadata::measured_for_vaddr_bits`) instead of this machine's width.
    pub fn set_vaddr_bits(&mut self, bits: u32) {
        self.model
            .set_metadata(Metadata::measured_for_vaddr_bits(bits));
    }

    /// `rows`: the tables to fill every `every` records (none: the summary only).
    pub fn new(
        config: AllocatorConfig,
        options: &ProcessOptions,
        cpus: u32,
        clock: DecayClock,
        every: u64,
        rows: Option<ProcessRows>,
    ) -> Result<Self, ProcessError> {
        let mut model = Process::new(config, options.clone(), cpus)?;
        model.set_decay_clock(clock);
        model.set_metadata(Metadata::measured_default());
        Ok(ProcessRun {
            model,
            summary: ProcessSummary::default(),
            rows,
            every: every.max(1),
            records: 0,
            dump_at: None,
            dump: None,
            tail_pushed: false,
        })
    }

    /// Dumps the statistics after record `event` (calls and thread exits, from 1), as a
    /// call of `malloc_stats_print` would there ([`Process::malloc_stats_print`]: its buffer
    /// stays in the model's state after); [`ProcessRun::dump_now`] for the end.
    pub(crate) fn dump_at(mut self, event: u64) -> Self {
        self.dump_at = Some(event);
        self
    }

    /// Dumps the statistics now (after the last record: the end of the replay), the last
    /// rows first (they show the state without the dump's buffer).
    pub(crate) fn dump_now(&mut self) -> Result<(), ProcessError> {
        self.push_last_rows();
        self.dump = Some(self.model.malloc_stats_print()?);
        Ok(())
    }

    /// The rows after the last record, if it fell between two and they are not in yet.
    fn push_last_rows(&mut self) {
        if !self.records.is_multiple_of(self.every) && !self.tail_pushed {
            if let Some(rows) = &mut self.rows {
                rows.push(self.records, &self.model);
            }
        }
        self.tail_pushed = true;
    }

    /// Records applied so far (calls and thread exits).
    pub fn records(&self) -> u64 {
        self.records
    }

    fn step(&mut self, record: &Record) -> Result<(), ProcessError> {
        self.model.apply(record)?;
        // A mapping is not an event: rows and readings count calls and exits.
        if let Record::Mapping { .. } = record {
            return Ok(());
        }
        self.summary.observe(self.model.stats());
        self.records += 1;
        if self.records.is_multiple_of(self.every) {
            if let Some(rows) = &mut self.rows {
                rows.push(self.records, &self.model);
            }
        }
        // After the rows: a row shows the event's state, the dump that state with its buffer.
        if self.dump_at == Some(self.records) {
            self.dump_now()?;
        }
        Ok(())
    }

    /// The model's statistics now.
    pub fn stats(&self) -> &ProcessStats {
        self.model.stats()
    }

    /// Each arena in use now, as `--per-arena`'s rows show it.
    pub fn arenas(&self) -> Vec<super::ArenaSnapshot> {
        self.model.snapshot().arenas
    }

    /// The result, once the engine has fed every record (the last rows added if not yet).
    pub fn finish(mut self) -> ProcessRunResult {
        self.push_last_rows();
        ProcessRunResult {
            summary: self.summary,
            rows: self.rows,
            narenas: self.model.narenas(),
            cache_block_bytes: self.model.cache_block_bytes(),
            stats: self.dump,
        }
    }
}

impl RecordConsumer for ProcessRun {
    type Error = ProcessError;

    fn record(&mut self, record: &Record) -> Result<(), ProcessError> {
        self.step(record)
    }
}
