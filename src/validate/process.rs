//! `fragsim validate`'s whole-process part: generated multi-threaded traces (frees from
//! other threads, more threads than arenas, allocations of 8 MiB and more for the huge
//! arena, thread exits, threads whose first calls are frees, large blocks through realloc)
//! replayed through the process model and, one real thread per trace thread in trace order
//! (the baton, [`crate::check::process`]), through the live jemalloc, every statistic
//! compared after every event. Decay is off and 5.3.1 runs with
//! `experimental_tcache_gc:false`: the configurations where jemalloc is deterministic.

use crate::check::process::{compare_process_live, ProcessAllocator};
use crate::process::{threaded_trace, ProcessOptions, ThreadedSpec, TraceKind};
use crate::sim::Comparison;
use crate::trace::{Event, Record};
use anyhow::{Context, Result};
use std::path::Path;

/// One generated threaded trace under one live jemalloc, every event compared.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProcessCheck {
    /// Which live jemalloc, with its version.
    pub allocator: String,
    pub spec: ThreadedSpec,
    /// The `MALLOC_CONF` both sides ran with (decay off is added).
    pub conf: String,
    /// Automatic arenas the live child reported.
    pub narenas: u32,
    /// What the trace exercises, counted on its records.
    pub shape: TraceShape,
    /// Records replayed (calls and thread exits): one snapshot after each.
    pub events: u64,
    pub comparison: Comparison,
}

/// What a threaded trace exercises: counted on the records, so a check's row says what it
/// covered rather than what its spec asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TraceShape {
    pub threads: u32,
    /// Frees (and reallocs) of an object another thread allocated.
    pub cross_thread_frees: u64,
    /// Allocations and reallocs of 8 MiB or more (jemalloc's `oversize_threshold`).
    pub huge_requests: u64,
    pub thread_exits: u64,
    /// Threads whose first call is a free (minimal threads; 5.3.1 starts one at its 128th).
    pub free_first_threads: u32,
    /// The most frees such a thread made before its first other call (or its exit).
    pub most_first_frees: u64,
    /// Reallocs from a large size to a large size (both above 14 KiB, the default's largest
    /// small class).
    pub large_reallocs: u64,
}

impl TraceShape {
    pub fn of(records: &[Record]) -> TraceShape {
        const SMALL_MAX: u64 = 14 << 10;
        let mut owner = std::collections::HashMap::new();
        let mut size_of = std::collections::HashMap::new();
        // Per thread: frees before its first other call, while it has made no other.
        let mut first_frees: Vec<Option<u64>> = Vec::new();
        let mut s = TraceShape::default();
        for r in records {
            match r {
                Record::Call(c) => {
                    s.threads = s.threads.max(c.thread + 1);
                    let t = c.thread as usize;
                    if t >= first_frees.len() {
                        first_frees.resize(t + 1, None);
                        first_frees[t] = Some(0);
                    }
                    let free = matches!(c.event, Event::Free { .. });
                    first_frees[t] = first_frees[t].filter(|_| free).map(|n| n + 1);
                    if let Some(n) = first_frees[t] {
                        s.free_first_threads += u32::from(n == 1);
                        s.most_first_frees = s.most_first_frees.max(n);
                    }
                    match c.event {
                        Event::Alloc { id, size, .. } => {
                            owner.insert(id, c.thread);
                            size_of.insert(id, size);
                            s.huge_requests += u64::from(size >= 8 << 20);
                        }
                        Event::Realloc { id, size } => {
                            s.huge_requests += u64::from(size >= 8 << 20);
                            let old = size_of.insert(id, size).unwrap_or(0);
                            s.large_reallocs += u64::from(old > SMALL_MAX && size > SMALL_MAX);
                            let before = owner.insert(id, c.thread);
                            s.cross_thread_frees += u64::from(before != Some(c.thread));
                        }
                        Event::Free { id } => {
                            size_of.remove(&id);
                            let before = owner.remove(&id);
                            s.cross_thread_frees += u64::from(before != Some(c.thread));
                        }
                    }
                }
                Record::ThreadExit { .. } => s.thread_exits += 1,
                Record::Mapping { .. } | Record::Control { .. } => {}
                Record::Site { .. } => {}
            }
        }
        s
    }
}

/// The generated traces and the options each runs with: 12 threads on 4 arenas (threads
/// share arenas by `arena_choose_hard`'s fewest-threads rule, exits leave arenas without
/// threads), 3 threads on the default arenas with many large and huge requests, threads whose
/// first calls are frees (runs of 1 to 300: 5.3.1 starts such a thread at its 128th), and
/// blocks grown and shrunk through realloc over every large class to 64 KiB. Each is a few
/// thousand events: seconds per jemalloc.
pub fn process_specs() -> Vec<(ThreadedSpec, &'static str)> {
    vec![
        (
            ThreadedSpec {
                seed: 21,
                events: 6_000,
                threads: 12,
                target_live: 1_200,
                cross_free_share: 0.4,
                huge_share: 0.004,
                ..ThreadedSpec::default()
            },
            "narenas:4",
        ),
        (
            ThreadedSpec {
                seed: 22,
                events: 4_000,
                threads: 3,
                target_live: 400,
                large_share: 0.2,
                huge_share: 0.01,
                ..ThreadedSpec::default()
            },
            "",
        ),
        (
            ThreadedSpec {
                seed: 23,
                threads: 9,
                target_live: 300,
                large_share: 0.15,
                kind: TraceKind::FirstFrees,
                ..ThreadedSpec::default()
            },
            "",
        ),
        (
            ThreadedSpec {
                seed: 24,
                threads: 6,
                target_live: 200,
                large_share: 0.5,
                exits: false,
                kind: TraceKind::FirstFrees,
                ..ThreadedSpec::default()
            },
            "narenas:2",
        ),
        (
            ThreadedSpec {
                seed: 25,
                threads: 3,
                target_live: 60,
                large_share: 0.3,
                realloc_share: 0.6,
                kind: TraceKind::LargeReallocs,
                ..ThreadedSpec::default()
            },
            "",
        ),
    ]
}

/// `count` more generated traces from seed `first` on (`validate --fuzz`): random calls,
/// threads whose first calls are frees and blocks grown through realloc in turn, over 1 to 4
/// threads, 20 to 200 live objects, large shares 0.1 to 0.7 and realloc shares 0.2 to 0.8 (the
/// search issue 40 §3 ran over 2,600 of them under Debian's 5.3.0, every one exact).
pub fn fuzz_specs(first: u64, count: u64) -> Vec<(ThreadedSpec, &'static str)> {
    let kinds = [
        TraceKind::Random,
        TraceKind::FirstFrees,
        TraceKind::LargeReallocs,
    ];
    (first..first.saturating_add(count))
        .map(|seed| {
            let spec = ThreadedSpec {
                seed,
                events: 3_000,
                threads: 1 + (seed % 4) as u32,
                target_live: 20 + (seed % 7) * 30,
                large_share: 0.1 + (seed % 5) as f64 * 0.15,
                realloc_share: 0.2 + (seed % 3) as f64 * 0.3,
                huge_share: 0.0,
                kind: kinds[(seed % 3) as usize],
                ..ThreadedSpec::default()
            };
            (spec, "")
        })
        .collect()
}

/// Replays every trace of [`process_specs`] through the model and the linked 5.3.1 (and
/// `system_jemalloc`, Debian's 5.3.0, when given), comparing after every event. `exe` is
/// the fragsim executable (the live child).
pub fn process_validation(exe: &Path, system_jemalloc: Option<&Path>) -> Result<Vec<ProcessCheck>> {
    process_validation_of(process_specs(), exe, system_jemalloc)
}

/// [`process_validation`] of the traces `specs` gives.
pub fn process_validation_of(
    specs: Vec<(ThreadedSpec, &'static str)>,
    exe: &Path,
    system_jemalloc: Option<&Path>,
) -> Result<Vec<ProcessCheck>> {
    let mut allocators = vec![("linked jemalloc".to_string(), ProcessAllocator::Linked)];
    if let Some(lib) = system_jemalloc {
        allocators.push((
            format!("system jemalloc {}", lib.display()),
            ProcessAllocator::System(lib.to_path_buf()),
        ));
    }
    let mut checks = Vec::new();
    for (spec, conf) in specs {
        let records = threaded_trace(&spec);
        let shape = TraceShape::of(&records);
        let options = ProcessOptions::parse(conf)?;
        for (label, allocator) in &allocators {
            let r = compare_process_live(exe, allocator, &records, &options, 1, 5)
                .with_context(|| format!("threaded trace seed {} under {label}", spec.seed))?;
            checks.push(ProcessCheck {
                allocator: format!("{label} ({})", r.version),
                spec,
                conf: conf.to_string(),
                narenas: r.narenas,
                shape,
                events: r.events,
                comparison: r.comparison,
            });
        }
    }
    Ok(checks)
}
