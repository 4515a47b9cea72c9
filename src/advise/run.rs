//! The one pass: every setting's process model ([`super::setting_run`]) fed by the engine,
//! and the settings ranked by one objective ([`Objective`]).

use super::setting_run::{PeakParts, SettingModel, SettingRun};
use super::{Objective, Setting};
use crate::analysis::{self, Analysis, TraceSource};
use crate::engine::{self, RunError};
use crate::process::{DecayClock, Metadata, ProcessError};
use crate::progress::Progress;
use crate::trace::{Record, TraceError};
use serde::Serialize;

/// One setting's replay.
#[derive(Clone, Debug, Serialize)]
pub struct SettingResult {
    pub setting: Setting,
    /// The automatic arenas it ran with.
    pub narenas: u32,
    pub peak_active_bytes: u64,
    /// The record (calls and thread exits, counted from 1) where active bytes first peaked.
    pub peak_event: u64,
    /// Mean active bytes over records (calls and thread exits), as `replay --process`.
    pub mean_active_bytes: f64,
    /// Mean over the trace's time (each state weighted by the time to the next record);
    /// `None` when the trace has no times or they span no time.
    pub time_mean_active_bytes: Option<f64>,
    pub at_peak: PeakParts,
    /// `stats.resident` (active + dirty + metadata) at its highest.
    pub peak_resident_bytes: u64,
    /// Mean resident bytes over the trace's time (each state held until the next record, on
    /// the model's clock); over records when the trace has no times
    /// ([`crate::process::ProcessSummary::mean_resident_bytes`], as `replay --process`).
    pub mean_resident_bytes: f64,
    pub final_active_bytes: u64,
    /// Records applied.
    pub events: u64,
}

/// What every setting's model assumes of the machine it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelMachine {
    /// CPUs for jemalloc's default `narenas` (4 x CPUs).
    pub cpus: u32,
    /// Decay's seed and clock resolution (as `replay --process --seed`).
    pub clock: DecayClock,
    /// The virtual address bits jemalloc was built for (`LG_VADDR`): the shape of its radix
    /// tree, part of the metadata in resident bytes ([`Metadata::for_vaddr_bits`]).
    pub vaddr_bits: u32,
}

impl ModelMachine {
    /// `cpus` CPUs, decay read on the trace's times exactly (seed 0), and this machine's
    /// address width (48 bits where unknown, as `Metadata::measured_default`).
    pub fn with_cpus(cpus: u32) -> ModelMachine {
        ModelMachine {
            cpus,
            clock: DecayClock::default(),
            vaddr_bits: crate::process::machine_vaddr_bits().unwrap_or(48),
        }
    }

    fn metadata(&self) -> Metadata {
        Metadata::for_vaddr_bits(self.vaddr_bits)
    }
}

/// Every setting's result, in grid order (the first is the baseline), ranked by one objective.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    /// Records replayed (calls and thread exits).
    pub events: u64,
    pub cpus: u32,
    pub results: Vec<SettingResult>,
    /// What the ranking and the recommendations go by.
    pub objective: Objective,
    /// Per result, its place by [`Advice::objective`] (1: lowest; equal figures share a place).
    pub rank: Vec<usize>,
    /// Settings not run, with why (decay on the clock, and the trace has no times).
    pub skipped: Vec<(Setting, String)>,
}

impl Advice {
    pub fn defaults(&self) -> &SettingResult {
        &self.results[0]
    }

    /// The same results ranked by `objective`.
    pub(crate) fn ranked_by(mut self, objective: Objective) -> Advice {
        self.rank = objective.ranks(&self.results);
        self.objective = objective;
        self
    }

    /// The settings recommended, each with why: every setting first by the objective (all of
    /// them when several tie) whose figure is below the defaults'; and when each of those
    /// turns the thread caches off, also the best with caches on (`tcache:false` trades
    /// speed for memory, which a replay does not show). Grid order within each.
    pub fn recommendations(&self) -> Vec<(usize, String)> {
        let o = self.objective;
        let base = o.of(self.defaults());
        let beats = |i: &usize| o.of(&self.results[*i]) < base;
        let first: Vec<usize> = (0..self.results.len())
            .filter(|&i| self.rank[i] == 1)
            .filter(beats)
            .collect();
        let why = match first.len() {
            1 => format!("lowest {}", o.words()),
            _ => format!("lowest {}, tied", o.words()),
        };
        let mut out: Vec<(usize, String)> = first.iter().map(|&i| (i, why.clone())).collect();
        let cached = |i: &usize| self.results[*i].setting.options.tcache;
        if !first.is_empty() && !first.iter().any(cached) {
            let best = (0..self.results.len())
                .filter(cached)
                .min_by_key(|&i| self.rank[i])
                .filter(beats);
            if let Some(c) = best {
                out.push((c, format!("lowest {} with thread caches on", o.words())));
            }
        }
        out
    }

    /// The indices of [`Advice::recommendations`].
    pub fn recommended(&self) -> Vec<usize> {
        self.recommendations().into_iter().map(|(i, _)| i).collect()
    }
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum AdviseError {
    #[error("setting '{setting}': {source}")]
    Model {
        setting: String,
        source: ProcessError,
    },
    #[error("no settings to compare")]
    NoSettings,
    #[error("live check of '{setting}': {message}")]
    Live { setting: String, message: String },
}

/// Replays `records` once under every setting (the first is the baseline every change is against),
/// `cpus` CPUs for the default `narenas`, decay read on the trace's times exactly (seed 0),
/// this machine's address width (`ModelMachine::with_cpus`).
pub fn advise(records: &[Record], settings: &[Setting], cpus: u32) -> Result<Advice, AdviseError> {
    advise_on_clock(records, settings, ModelMachine::with_cpus(cpus))
}

/// Whether a record has its time (a site needs none; decay above 0 ms needs the others').
fn timed(r: &Record) -> bool {
    match r {
        Record::Site { .. } | Record::Mapping { .. } => true,
        r => r.time_ns().is_some(),
    }
}

/// [`advise`] on a given machine: decay's seed and clock resolution as `replay --process
/// --seed` sets them, and the address width.
/// Settings whose decay runs on the clock are skipped when the trace has no times
/// ([`Advice::skipped`]).
pub fn advise_on_clock(
    records: &[Record],
    settings: &[Setting],
    machine: ModelMachine,
) -> Result<Advice, AdviseError> {
    advise_stream_reopened(
        engine::in_memory(records),
        settings,
        machine,
        &Progress::default(),
    )
    .map_err(engine::consumer_error)
}

/// [`advise_on_clock`] over a trace read as a stream: `open` gives its records afresh (read
/// once to see whether every record has a time, when a setting runs on the clock, then once
/// through [`engine::run`]), so memory follows the live objects, never the trace's length.
/// `progress` is told of the records as the models take them (a step begun and ended by the
/// caller, who knows the trace's length).
pub fn advise_stream(
    source: TraceSource<'_>,
    settings: &[Setting],
    machine: ModelMachine,
    progress: &Progress,
) -> Result<Advice, RunError<AdviseError, TraceError>> {
    advise_stream_reopened(|| source.records(), settings, machine, progress)
}

/// [`advise_stream`] over any re-opening of a trace's records (`open` gives them afresh).
pub(crate) fn advise_stream_reopened<I, E>(
    open: impl Fn() -> Result<I, E>,
    settings: &[Setting],
    machine: ModelMachine,
    progress: &Progress,
) -> Result<Advice, RunError<AdviseError, E>>
where
    I: Iterator<Item = Result<Record, E>>,
{
    let all_timed = match settings.iter().any(Setting::on_clock) {
        true => all_timed(open().map_err(RunError::Trace)?).map_err(RunError::Trace)?,
        false => true,
    };
    let (settings, skipped) = runnable(settings, all_timed);
    if settings.is_empty() {
        return Err(RunError::Consumer(AdviseError::NoSettings));
    }
    let analyses = settings
        .iter()
        .map(|s| {
            SettingRun::new(s, machine.cpus, machine.clock, machine.metadata())
                .map(|run| {
                    Box::new(SettingModel::new(run, s.clone())) as Box<dyn Analysis<AdviseError>>
                })
                .map_err(|source| AdviseError::Model {
                    setting: s.label(),
                    source,
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(RunError::Consumer)?;
    // One pass, one analysis per setting, each on a thread of its own.
    let findings = analysis::run_stream(open().map_err(RunError::Trace)?, analyses, &|n| {
        progress.advance(n)
    })?;
    let results: Vec<SettingResult> = analysis::results(findings);
    Ok(ranked(results, machine.cpus, skipped))
}

/// Whether every record of the stream has its time (read up to the first without).
fn all_timed<E>(records: impl Iterator<Item = Result<Record, E>>) -> Result<bool, E> {
    for r in records {
        if !timed(&r?) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The settings that run, and those skipped with why: decay or the cache GC on the clock
/// need every record's time.
fn runnable(settings: &[Setting], all_timed: bool) -> (Vec<Setting>, Vec<(Setting, String)>) {
    if all_timed {
        return (settings.to_vec(), Vec::new());
    }
    let (kept, off): (Vec<Setting>, Vec<Setting>) =
        settings.iter().cloned().partition(|s| !s.on_clock());
    let skipped = off
        .into_iter()
        .map(|s| {
            let why = format!("the trace has no times, and {}", s.clock_reason());
            (s, why)
        })
        .collect();
    (kept, skipped)
}

/// The results ranked by the default objective ([`Advice::ranked_by`] for another).
fn ranked(results: Vec<SettingResult>, cpus: u32, skipped: Vec<(Setting, String)>) -> Advice {
    let objective = Objective::default();
    Advice {
        events: results[0].events,
        cpus,
        rank: objective.ranks(&results),
        objective,
        results,
        skipped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One 64 KiB object allocated then freed (`times`: the records' times, if any), under
    /// `tcache:false` with decay off, with `dirty_decay_ms:0`, and with `dirty_decay_ms:1000`.
    /// `text` (with `times`) through three decay settings on a machine of `vaddr_bits` (the
    /// tree's shape is part of resident: pinned, so the figures do not depend on the machine
    /// the test runs on).
    fn one_large(text: &str, times: Option<&[u64]>, vaddr_bits: u32) -> Advice {
        let mut records = crate::process::records_from_text(text).unwrap();
        if let Some(times) = times {
            for (r, &t) in records.iter_mut().zip(times) {
                if let Record::Call(c) = r {
                    c.time_ns = Some(t);
                }
            }
        }
        let grid: Vec<Setting> = [
            "tcache:false",
            "tcache:false,dirty_decay_ms:0",
            "tcache:false,dirty_decay_ms:1000",
        ]
        .iter()
        .map(|c| Setting::new(c, crate::sizeclass::Preset::LINKED).unwrap())
        .collect();
        let machine = ModelMachine {
            vaddr_bits,
            ..ModelMachine::with_cpus(2)
        };
        advise_on_clock(&records, &grid, machine).unwrap()
    }

    /// The clock GC on a trace without times is skipped, and the reason names the GC (not
    /// decay); with times it runs (the model's clock GC, `process/model/gc.rs`).
    #[test]
    fn the_clock_gc_needs_times_and_says_so() {
        let gc = Setting::new(
            "experimental_tcache_gc:true",
            crate::sizeclass::Preset::LINKED,
        )
        .unwrap();
        let grid = [Setting::defaults(), gc];
        let mut records = crate::process::records_from_text("a 0 64\nf 0\n").unwrap();
        let a = advise(&records, &grid, 2).unwrap();
        assert_eq!((a.results.len(), a.skipped.len()), (1, 1));
        assert!(a.skipped[0].1.contains("10 ms clock"), "{:?}", a.skipped);
        for (r, t) in records.iter_mut().zip([0, 20_000_000]) {
            if let Record::Call(c) = r {
                c.time_ns = Some(t);
            }
        }
        let a = advise(&records, &grid, 2).unwrap();
        assert_eq!((a.results.len(), a.skipped.len()), (2, 0));
    }

    #[test]
    fn the_address_width_moves_resident_by_the_start_up_radix_tree() {
        // rtree.h's shapes, hand-derived: a 48-bit build's tree has two levels and start-up
        // holds one leaf of 2^18 8-byte entries (2,097,152 bytes); a 57-bit build's has
        // three, start-up holds its middle node (2^15 x 8 = 262,144) and one leaf of 2^15
        // 16-byte entries (524,288): 786,432. The rest of the base is the same measured
        // bytes, and one small object maps no new leaf: resident differs by 1,310,720.
        let records = crate::process::records_from_text("a 0 64\nf 0\n").unwrap();
        let on = |vaddr_bits| {
            let machine = ModelMachine {
                vaddr_bits,
                ..ModelMachine::with_cpus(2)
            };
            advise_on_clock(&records, &[Setting::defaults()], machine).unwrap()
        };
        // With the base modelled block by block (`model/base.rs`), the 48-bit tree's 2 MiB
        // leaf ends its block's carving on a page boundary, so the first extent record after
        // it touches one page more than on the 57-bit build (as jemalloc's `base_alloc`
        // does; the process model's resident is exact live at every event).
        let (narrow, wide) = (on(48).results.remove(0), on(57).results.remove(0));
        assert_eq!(narrow.peak_active_bytes, wide.peak_active_bytes);
        assert_eq!(
            narrow.peak_resident_bytes - wide.peak_resident_bytes,
            2_097_152 - 786_432 + 4096
        );
    }

    #[test]
    fn decay_0_leaves_no_dirty_pages_so_resident_is_active_plus_metadata() {
        // Hand derivation, jemalloc 5.3.1, 4 KiB pages, no thread cache. A 64 KiB request is
        // large: 65,536 usable plus the cache-oblivious padding page, 69,632 active (17
        // pages). 5.3.1's `pac_alloc_real` takes from retained (the 2 MiB first mapping) the
        // least size class at or above 68 KiB, 80 KiB, and leaves the 12 KiB tail dirty.
        // Metadata: the process model starts from the base measured live before the first
        // event (`Metadata::for_vaddr_bits`, resident B below) and adds 128-byte extent
        // records (base_alloc_edata, 128-byte aligned). On a 57-bit build its allocated
        // 1,448,704 bytes leave the bump offset 2,816 bytes into its last page: ten records
        // fit in that page's last 1,280 bytes, and this trace makes a handful, so no page
        // more (R = 0). On a 48-bit build start-up's 2 MiB leaf ends the block's carving on a
        // page boundary, and the first record touches one more page (R = 4,096, as the width
        // test above has it). Live on a 57-bit machine, `replay --process --live
        // --malloc-conf tcache:false` of this shape: final stats.resident 1,585,152 in model
        // and live (the live replayer's own base is larger than B). Resident = active
        // + dirty + metadata = 69,632 + 12,288 + B + R = 81,920 + B + R in both rows. Freed:
        // with decay off the 80 KiB stay dirty, resident 81,920 + B + R; with
        // dirty_decay_ms:0 they are purged at once (to retained, muzzy 0): dirty 0, resident
        // = active 0 + B + R.
        for (bits, r) in [(48, 4096), (57, 0)] {
            let a = one_large("a 0 65536\nf 0\n", None, bits);
            let (off, zero) = (&a.results[0], &a.results[1]);
            let base = crate::process::Metadata::for_vaddr_bits(bits).base_bytes;
            let b = base as f64;
            assert_eq!(
                (off.peak_active_bytes, zero.peak_active_bytes),
                (69632, 69632)
            );
            assert_eq!(
                (off.peak_resident_bytes, zero.peak_resident_bytes),
                (81920 + base + r, 81920 + base + r),
                "{bits} bits"
            );
            // No times: the mean over the two records. Off: 81,920 twice; 0: (81,920 + 0) / 2.
            assert_eq!(off.mean_resident_bytes, 81920.0 + b + r as f64);
            assert_eq!(zero.mean_resident_bytes, 40960.0 + b + r as f64);
            // By peak resident (the default objective) the rows tie, and a tie with the
            // defaults is no reason to change; by mean resident, purging at once wins.
            assert_eq!(a.rank, [1, 1]);
            assert!(a.recommendations().is_empty());
            let a = a.ranked_by(Objective::MeanResident);
            assert_eq!(a.rank, [2, 1]);
            assert_eq!(
                a.recommendations(),
                [(1, "lowest mean resident".to_string())]
            );
            // Decay over 1 s needs the trace's clock: skipped, said why.
            assert_eq!(a.results.len(), 2);
            assert_eq!(a.skipped.len(), 1);
            assert!(a.skipped[0].1.contains("no times"), "{:?}", a.skipped);

            // With times (ns): freed at 1,000, a second 64 KiB object at 4,000 takes the same
            // pages back (from dirty with decay off, from retained with 0): 81,920 again.
            // Over the 4,000 ns: off holds 81,920 throughout; 0 holds it 1,000 ns, then 0
            // for 3,000 ns: 20,480 (each + B + R).
            let t = one_large("a 0 65536\nf 0\na 1 65536\n", Some(&[0, 1000, 4000]), bits);
            assert_eq!(t.results.len(), 3, "the clock row runs on a timed trace");
            assert!(t.skipped.is_empty());
            assert_eq!(t.results[0].mean_resident_bytes, 81920.0 + b + r as f64);
            assert_eq!(t.results[1].mean_resident_bytes, 20480.0 + b + r as f64);
            assert_eq!(t.results[1].peak_resident_bytes, 81920 + base + r);
        }
    }
}
