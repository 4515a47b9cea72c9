//! Seeded multi-threaded traces for the process model and its live check: threads that
//! start one after another, frees from other threads, more threads than arenas if asked,
//! allocations of 8 MiB and more (the huge arena), thread exits.

use crate::trace::{Call, Event, IdPool, ObjectId, Record};
use serde::Serialize;

/// What a generated threaded trace looks like.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ThreadedSpec {
    pub seed: u64,
    /// Calls in the trace (thread exits come on top).
    pub events: u64,
    pub threads: u32,
    /// Live objects hover around this many, over all threads.
    pub target_live: u64,
    /// Share of frees that free another thread's object.
    pub cross_free_share: f64,
    /// Share of allocations between 14 KiB and 64 KiB (cached and uncached large sizes).
    pub large_share: f64,
    /// Share of allocations of 8-20 MiB (the huge arena).
    pub huge_share: f64,
    pub realloc_share: f64,
    /// Whether threads other than 0 exit (`x`) once their span of the trace is over.
    pub exits: bool,
    /// Share of a started thread's calls marked reentrant (made inside another allocator call
    /// of the thread, as glibc's `pthread_create` allocates inside jemalloc). Random only.
    pub reentrant_share: f64,
    /// Random calls, or one of the scripted shapes (`process/scripted.rs`).
    pub kind: TraceKind,
}

/// Which calls a [`ThreadedSpec`] generates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum TraceKind {
    /// Random allocations, frees and reallocs on threads that start one after another.
    #[default]
    Random,
    /// Threads whose first calls are frees of thread 0's objects (`scripted::first_frees_trace`).
    FirstFrees,
    /// Blocks grown and shrunk through realloc over the large classes
    /// (`scripted::large_reallocs_trace`).
    LargeReallocs,
}

impl Default for ThreadedSpec {
    fn default() -> Self {
        ThreadedSpec {
            seed: 1,
            events: 20_000,
            threads: 4,
            target_live: 1_500,
            cross_free_share: 0.3,
            large_share: 0.05,
            huge_share: 0.002,
            realloc_share: 0.08,
            exits: true,
            reentrant_share: 0.0,
            kind: TraceKind::Random,
        }
    }
}

use crate::random::SplitMix as Rng;

/// The records `spec` describes (deterministic in `spec.seed`), by its kind.
pub fn threaded_trace(spec: &ThreadedSpec) -> Vec<Record> {
    match spec.kind {
        TraceKind::Random => random_trace(spec),
        TraceKind::FirstFrees => super::scripted::first_frees_trace(spec),
        TraceKind::LargeReallocs => super::scripted::large_reallocs_trace(spec),
    }
}

/// [`TraceKind::Random`]: thread k (k >= 1) is active from call `k * events / (2 * threads)`
/// on; with `exits`, it exits after a span of about half the trace (its objects stay live
/// until some thread frees them).
fn random_trace(spec: &ThreadedSpec) -> Vec<Record> {
    let mut rng = Rng(spec.seed);
    let threads = spec.threads.max(1) as u64;
    let start = |k: u64| k * spec.events / (2 * threads);
    let end = |k: u64| {
        if spec.exits && k > 0 {
            start(k) + spec.events / 2
        } else {
            u64::MAX
        }
    };
    let mut out = Vec::with_capacity(spec.events as usize + threads as usize);
    // (id, owner) of live objects.
    let mut live: Vec<(ObjectId, u32)> = Vec::new();
    let mut ids = IdPool::new();
    let mut exited = vec![false; threads as usize];
    // Threads that have allocated: only they can be inside an allocator call of their own.
    let mut started = vec![false; threads as usize];
    let size_of = |rng: &mut Rng| {
        let r = rng.unit();
        if r < spec.huge_share {
            rng.log_uniform(8 << 20, 20 << 20)
        } else if r < spec.huge_share + spec.large_share {
            rng.log_uniform((14 << 10) + 1, 64 << 10)
        } else {
            rng.log_uniform(1, 14 << 10)
        }
    };
    for n in 0..spec.events {
        for k in 1..threads {
            if !exited[k as usize] && n >= end(k) {
                exited[k as usize] = true;
                out.push(Record::ThreadExit {
                    thread: k as u32,
                    time_ns: None,
                });
            }
        }
        let active: Vec<u32> = (0..threads)
            .filter(|&k| n >= start(k) && !exited[k as usize])
            .map(|k| k as u32)
            .collect();
        let thread = active[rng.below(active.len() as u64) as usize];
        let fill = live.len() as f64 / spec.target_live.max(1) as f64;
        let event = if !live.is_empty() && rng.unit() < spec.realloc_share {
            let (id, _) = live[rng.below(live.len() as u64) as usize];
            Event::Realloc {
                id,
                size: size_of(&mut rng),
            }
        } else if live.is_empty() || rng.unit() > fill * 0.5 {
            let id = ids.take().expect("fewer than 2^32 live objects");
            live.push((id, thread));
            Event::Alloc {
                id,
                size: size_of(&mut rng),
                align: 0,
            }
        } else {
            let i = pick_free(&mut rng, &live, thread, spec.cross_free_share);
            let (id, _) = live.swap_remove(i);
            ids.give_back(id);
            Event::Free { id }
        };
        // Drawn only when asked for, so that traces without reentrant calls stay as they were.
        let reentrant = spec.reentrant_share > 0.0
            && started[thread as usize]
            && rng.unit() < spec.reentrant_share;
        started[thread as usize] |= !matches!(event, Event::Free { .. });
        out.push(Record::Call(Call {
            event,
            thread,
            time_ns: None,
            site: None,
            reentrant,
            mallocx_flags: 0,
        }));
    }
    out
}

/// Which live object `thread` frees (an index into `live`, of (id, owner) pairs): with
/// probability `cross_share` any object, else one of its own (any when it has none).
fn pick_free(rng: &mut Rng, live: &[(ObjectId, u32)], thread: u32, cross_share: f64) -> usize {
    let cross = rng.unit() < cross_share;
    let own: Vec<usize> = if cross {
        Vec::new()
    } else {
        (0..live.len()).filter(|&i| live[i].1 == thread).collect()
    };
    if own.is_empty() {
        rng.below(live.len() as u64) as usize
    } else {
        own[rng.below(own.len() as u64) as usize]
    }
}

/// The records in the text form (`t TID` switches thread, `x` exits it).
pub fn to_text(records: &[Record]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let mut cur = 0u32;
    for r in records {
        let Some(thread) = r.thread() else { continue };
        if thread != cur {
            let _ = writeln!(s, "t {thread}");
            cur = thread;
        }
        match r {
            Record::Call(c) => match c.event {
                Event::Alloc { id, size, align } if align > 1 => {
                    let _ = writeln!(s, "a {id} {size} {align}");
                }
                Event::Alloc { id, size, .. } => {
                    let _ = writeln!(s, "a {id} {size}");
                }
                Event::Free { id } => {
                    let _ = writeln!(s, "f {id}");
                }
                Event::Realloc { id, size } => {
                    let _ = writeln!(s, "r {id} {size}");
                }
            },
            _ => {
                let _ = writeln!(s, "x");
            }
        }
    }
    s
}

/// Why a line of the text form could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}: '{text}'")]
pub struct TextError {
    pub line: usize,
    pub what: &'static str,
    pub text: String,
}

/// Reads the text form's `t`, `a`, `f`, `r` and `x` lines (blank lines and `#` comments
/// skipped; `T` and `s` lines and `@SITE` suffixes ignored: the model uses neither).
pub fn records_from_text(text: &str) -> Result<Vec<Record>, TextError> {
    let mut out = Vec::new();
    let mut thread = 0u32;
    for (i, line) in text.lines().enumerate() {
        let err = |what| TextError {
            line: i + 1,
            what,
            text: line.to_string(),
        };
        let f: Vec<&str> = line
            .split_whitespace()
            .filter(|w| !w.starts_with('@'))
            .collect();
        let num = |k: usize| -> Result<u64, TextError> {
            f.get(k)
                .ok_or_else(|| err("missing field"))?
                .parse()
                .map_err(|_| err("bad number"))
        };
        let event = match f.first().copied() {
            None => continue,
            Some(w) if w.starts_with('#') => continue,
            Some("T") | Some("s") => continue,
            Some("t") => {
                thread = num(1)? as u32;
                continue;
            }
            Some("x") => {
                out.push(Record::ThreadExit {
                    thread,
                    time_ns: None,
                });
                continue;
            }
            Some("a") => Event::Alloc {
                id: num(1)? as u32,
                size: num(2)?,
                align: if f.len() > 3 { num(3)? } else { 0 },
            },
            Some("f") => Event::Free { id: num(1)? as u32 },
            Some("r") => Event::Realloc {
                id: num(1)? as u32,
                size: num(2)?,
            },
            Some(_) => return Err(err("unknown line")),
        };
        out.push(Record::Call(Call {
            event,
            thread,
            time_ns: None,
            site: None,
            reentrant: false,
            mallocx_flags: 0,
        }));
    }
    Ok(out)
}
