//! A whole trace through the process model (`fragsim replay TRACE --process`) as an
//! [`engine`](crate::engine) consumer: the summary, and the per-arena and timeline rows every
//! K records (calls and thread exits) and after the last. Several runs (seeds) are several
//! consumers of one engine pass.

use super::{
    DecayClock, Metadata, Process, ProcessError, ProcessOptions, ProcessStats, ProcessSummary,
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
}

/// What a finished run gives: its summary, the rows if asked for, `narenas` and the thread
/// cache block's size.
pub struct ProcessRunResult {
    pub summary: ProcessSummary,
    pub rows: Option<ProcessRows>,
    pub narenas: u32,
    pub cache_block_bytes: u64,
}

impl ProcessRun {
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
        })
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
        Ok(())
    }

    /// The model's statistics now.
    pub fn stats(&self) -> &ProcessStats {
        self.model.stats()
    }

    /// The result, once the engine has fed every record (the last rows added if not yet).
    pub fn finish(mut self) -> ProcessRunResult {
        if !self.records.is_multiple_of(self.every) {
            if let Some(rows) = &mut self.rows {
                rows.push(self.records, &self.model);
            }
        }
        ProcessRunResult {
            summary: self.summary,
            rows: self.rows,
            narenas: self.model.narenas(),
            cache_block_bytes: self.model.cache_block_bytes(),
        }
    }
}

impl RecordConsumer for ProcessRun {
    type Error = ProcessError;

    fn record(&mut self, record: &Record) -> Result<(), ProcessError> {
        self.step(record)
    }
}
