//! `fragsim validate`'s whole-process part: generated multi-threaded traces (frees from
//! other threads, more threads than arenas, allocations of 8 MiB and more for the huge
//! arena, thread exits) replayed through the process model and, one real thread per trace
//! thread in trace order (the baton, [`crate::live::process`]), through the live jemalloc,
//! every statistic compared after every event. Decay is off and 5.3.1 runs with
//! `experimental_tcache_gc:false`: the configurations where jemalloc is deterministic.

use crate::live::process::{compare_process_live, ProcessAllocator};
use crate::process::{threaded_trace, ProcessOptions, ThreadedSpec};
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
}

impl TraceShape {
    pub fn of(records: &[Record]) -> TraceShape {
        let mut owner = std::collections::HashMap::new();
        let mut s = TraceShape::default();
        for r in records {
            match r {
                Record::Call(c) => {
                    s.threads = s.threads.max(c.thread + 1);
                    match c.event {
                        Event::Alloc { id, size, .. } => {
                            owner.insert(id, c.thread);
                            s.huge_requests += u64::from(size >= 8 << 20);
                        }
                        Event::Realloc { id, size } => {
                            s.huge_requests += u64::from(size >= 8 << 20);
                            let before = owner.insert(id, c.thread);
                            s.cross_thread_frees += u64::from(before != Some(c.thread));
                        }
                        Event::Free { id } => {
                            let before = owner.remove(&id);
                            s.cross_thread_frees += u64::from(before != Some(c.thread));
                        }
                    }
                }
                Record::ThreadExit { .. } => s.thread_exits += 1,
                Record::Site { .. } => {}
            }
        }
        s
    }
}

/// The generated traces and the options each runs with: 12 threads on 4 arenas (threads
/// share arenas by `arena_choose_hard`'s fewest-threads rule, exits leave arenas without
/// threads), and 3 threads on the default arenas with many large and huge requests. Each is
/// a few thousand events: seconds per jemalloc.
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
    ]
}

/// Replays every trace of [`process_specs`] through the model and the linked 5.3.1 (and
/// `system_jemalloc`, Debian's 5.3.0, when given), comparing after every event. `exe` is
/// the fragsim executable (the live child).
pub fn process_validation(exe: &Path, system_jemalloc: Option<&Path>) -> Result<Vec<ProcessCheck>> {
    let mut allocators = vec![("linked jemalloc".to_string(), ProcessAllocator::Linked)];
    if let Some(lib) = system_jemalloc {
        allocators.push((
            format!("system jemalloc {}", lib.display()),
            ProcessAllocator::System(lib.to_path_buf()),
        ));
    }
    let mut checks = Vec::new();
    for (spec, conf) in process_specs() {
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
