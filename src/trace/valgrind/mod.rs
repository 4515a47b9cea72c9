//! Import of `valgrind --trace-malloc=yes` logs (memcheck, checked against valgrind 3.19).
//!
//! Each call is one line `--PID-- NAME(ARGS) = RESULT`, e.g. `malloc(24) = 0x4A5B040`,
//! `calloc(3,8) = 0x..`, `realloc(0x4A5B040,100) = 0x..`, `memalign(al 64, size 100) = 0x..`
//! (also what posix_memalign, aligned_alloc and valloc print),
//! `_ZnwmSt11align_val_t(size 128, al 64) = 0x..`, `free(0x..)`, `_ZdlPvm(0x..)`. Two forms
//! nest: `realloc(0x0,10)malloc(10) = 0x..` (a realloc of null is a malloc) and
//! `realloc(0x..,0)free(0x..)` followed by a line ` = 0` (a realloc to 0 frees); the inner call
//! is what happened, so it is the one imported. Threads interleave: `malloc(31)calloc(3,16) =
//! 0x..` is a `malloc(31)` interrupted by another thread's `calloc`, its result on a later line
//! ` = 0x..` (results are matched first in, first out); a valgrind warning can take the rest
//! of a line the same way.
//! Lines of other kinds (`==PID==` messages, program output, other `--PID--` lines) are
//! skipped; `free(0x0)` is ignored.

use super::addr::{AddressImporter, AddressIssue, IssueCounts};
use super::{Event, TraceError};
use std::collections::BTreeSet;
use std::io::BufRead;

mod parse;
use parse::{
    classify, line_calls, nests, parse_call, parse_result, split_prefix, Kind, Parsed, Waiting,
};

/// How to import.
#[derive(Clone, Copy, Debug, Default)]
pub struct ValgrindOptions {
    /// Import only this process's lines (required when the log has several).
    pub pid: Option<u32>,
    /// Make inconsistent calls errors instead of counted repairs.
    pub strict: bool,
}

/// What an import read and repaired.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ValgrindSummary {
    pub pid: u32,
    pub lines: u64,
    /// Allocation calls recognised (including ignored ones).
    pub calls: u64,
    pub events: u64,
    /// `free(0x0)` and other frees of null.
    pub null_frees: u64,
    /// Allocation calls that returned null (nothing allocated).
    pub failed_allocations: u64,
    /// `--PID-- name(...)` lines of functions that allocate nothing (e.g. malloc_usable_size).
    pub other_calls: u64,
    /// Results matched to a call while several calls of different threads waited for theirs
    /// (first in, first out; the sizes of such calls may be swapped between them).
    pub ambiguous_results: u64,
    /// Allocation calls whose result never came (the program ended inside them): not imported.
    pub unresolved_calls: u64,
    /// With [`ValgrindOptions::pid`]: the other processes the log has lines of (skipped).
    pub other_pids: BTreeSet<u32>,
    pub issues: IssueCounts,
}

impl ValgrindSummary {
    /// What an import could not import exactly, one line, or `None` if nothing: said loudly,
    /// since each is an allocation missing or repaired in the trace.
    pub(crate) fn losses(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.issues.total() > 0 {
            parts.push(self.issues.to_string());
        }
        if self.unresolved_calls > 0 {
            parts.push(format!(
                "{} allocation call(s) never got their result (not imported)",
                self.unresolved_calls
            ));
        }
        if self.ambiguous_results > 0 {
            parts.push(format!(
                "{} result(s) matched first-in first-out while several threads' calls waited (their sizes may be swapped)",
                self.ambiguous_results
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The PIDs of every `--PID--` line, for the error when there are several.
fn all_pids(first: u32, second: u32, rest: impl BufRead) -> BTreeSet<u32> {
    let mut pids: BTreeSet<u32> = [first, second].into();
    for line in rest.lines().map_while(Result::ok) {
        if let Some((pid, _)) = split_prefix(&line) {
            pids.insert(pid);
        }
    }
    pids
}

/// Reads a valgrind log from `input` (named `name` in errors) and hands each event to `sink`.
pub fn import_valgrind<R: BufRead>(
    mut input: R,
    name: &str,
    options: &ValgrindOptions,
    mut sink: impl FnMut(&Event) -> Result<(), TraceError>,
) -> Result<ValgrindSummary, TraceError> {
    let mut summary = ValgrindSummary::default();
    let mut importer = AddressImporter::new();
    let mut chosen = options.pid;
    let mut out: Vec<Event> = Vec::with_capacity(4);
    let mut line = String::new();
    let mut waiting: std::collections::VecDeque<Waiting> = Default::default();
    loop {
        line.clear();
        let n = input
            .read_line(&mut line)
            .map_err(|e| TraceError::io(name, e))?;
        if n == 0 {
            break;
        }
        summary.lines += 1;
        let line_no = summary.lines;
        let err = |what: String| TraceError::Line {
            file: name.to_string(),
            line: line_no,
            what,
        };
        let Some((pid, body)) = split_prefix(line.trim_end()) else {
            continue;
        };
        if !keep_pid(&mut chosen, pid, options, &mut summary, &mut input, name)? {
            continue;
        }
        let text = body.trim_start();
        let mut calls = Calls {
            importer: &mut importer,
            summary: &mut summary,
            waiting: &mut waiting,
            out: &mut out,
        };
        calls.take_line(text, options, &mut sink, &err)?;
    }
    summary.unresolved_calls = waiting
        .iter()
        .filter(|w| !matches!(w, Waiting::Nothing))
        .count() as u64;
    summary.pid = chosen.unwrap_or(0);
    summary.issues = importer.issues;
    check_summary(summary, options, name)
}

/// The import's state a call on a line changes.
struct Calls<'a> {
    importer: &'a mut AddressImporter,
    summary: &'a mut ValgrindSummary,
    waiting: &'a mut std::collections::VecDeque<Waiting>,
    out: &'a mut Vec<Event>,
}

impl Calls<'_> {
    /// One line's text after its `==PID==` prefix: the result of a call printed on an
    /// earlier line, or the calls on it (several where calls nest or threads interleave),
    /// each resolved and its events passed to `sink`.
    fn take_line(
        &mut self,
        text: &str,
        options: &ValgrindOptions,
        sink: &mut impl FnMut(&Event) -> Result<(), TraceError>,
        err: &impl Fn(String) -> TraceError,
    ) -> Result<(), TraceError> {
        if text.starts_with('=') {
            // The result of a call printed on an earlier line.
            let Some(call) = self.waiting.pop_front() else {
                return Ok(());
            };
            if !self.waiting.is_empty() {
                self.summary.ambiguous_results += 1;
            }
            let result = parse_result(text).map_err(err)?.unwrap_or(0);
            let issue =
                resolve(self.importer, self.summary, call, result, self.out).map_err(err)?;
            return finish_call(issue, options, self.summary, self.out, sink, err);
        }
        let calls = line_calls(text);
        for (i, call) in calls.iter().enumerate() {
            if calls.get(i + 1).is_some_and(|inner| nests(call, inner)) {
                // realloc(p,0)free(p) prints a ` = 0` line later.
                if classify(calls[i + 1].name) == Some(Kind::Free) {
                    self.waiting.push_back(Waiting::Nothing);
                }
                continue;
            }
            let parsed = parse_call(call).map_err(err)?;
            let has_result = call.rest.trim_start().starts_with('=');
            // Only an allocation's result is an address (`malloc_usable_size` returns a size).
            let result = match parsed {
                Some(Parsed::Result(_)) => parse_result(call.rest).map_err(err)?,
                _ => None,
            };
            let issue = self.take(parsed, result, has_result).map_err(err)?;
            finish_call(issue, options, self.summary, self.out, sink, err)?;
        }
        Ok(())
    }

    /// Takes one parsed call (`None`: not an allocation function), its result if on the line.
    fn take(
        &mut self,
        parsed: Option<Parsed>,
        result: Option<u64>,
        has_result: bool,
    ) -> Result<Option<AddressIssue>, String> {
        Ok(match parsed {
            None => {
                self.summary.other_calls += 1;
                if !has_result {
                    self.waiting.push_back(Waiting::Nothing);
                }
                None
            }
            Some(Parsed::Free(addr)) => {
                self.summary.calls += 1;
                if addr == 0 {
                    self.summary.null_frees += 1;
                    None
                } else {
                    self.importer.free(addr, self.out)
                }
            }
            Some(Parsed::Result(call)) => {
                self.summary.calls += 1;
                match result {
                    Some(result) => resolve(self.importer, self.summary, call, result, self.out)?,
                    // Its result comes later (another thread's call or a valgrind warning
                    // took the rest of the line).
                    None => {
                        self.waiting.push_back(call);
                        None
                    }
                }
            }
        })
    }
}

/// Whether a line of process `pid` belongs to the import: the first process seen (or the
/// `--pid` given) is chosen; with no `--pid`, a second process is an error naming them all.
fn keep_pid(
    chosen: &mut Option<u32>,
    pid: u32,
    options: &ValgrindOptions,
    summary: &mut ValgrindSummary,
    rest: impl BufRead,
    name: &str,
) -> Result<bool, TraceError> {
    match *chosen {
        None => *chosen = Some(pid),
        Some(p) if p == pid => {}
        Some(_) if options.pid.is_some() => {
            summary.other_pids.insert(pid);
            return Ok(false);
        }
        Some(p) => {
            let pids = all_pids(p, pid, rest);
            let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
            return Err(TraceError::Input {
                file: name.to_string(),
                what: format!(
                    "the log has lines of {} processes (PIDs {}): choose one with --pid (`fragsim record --follow-forks` records one trace per process)",
                    pids.len(),
                    list.join(", ")
                ),
            });
        }
    }
    Ok(true)
}

/// The import's end: a log without calls, or (`--strict`) with calls never resolved, is
/// refused.
fn check_summary(
    summary: ValgrindSummary,
    options: &ValgrindOptions,
    name: &str,
) -> Result<ValgrindSummary, TraceError> {
    if summary.calls == 0 {
        return Err(TraceError::Input {
            file: name.to_string(),
            what: "no allocation calls found (expected the output of valgrind --trace-malloc=yes)"
                .into(),
        });
    }
    if options.strict && summary.unresolved_calls > 0 {
        return Err(TraceError::Input {
            file: name.to_string(),
            what: format!(
                "{} allocation call(s) never got their result (--strict)",
                summary.unresolved_calls
            ),
        });
    }
    Ok(summary)
}

/// A call and its result: the events it means.
fn resolve(
    importer: &mut AddressImporter,
    summary: &mut ValgrindSummary,
    call: Waiting,
    result: u64,
    out: &mut Vec<Event>,
) -> Result<Option<AddressIssue>, String> {
    match call {
        Waiting::Nothing => Ok(None),
        Waiting::Realloc { old, size } => realloc(importer, summary, old, result, size, out),
        Waiting::Alloc { .. } if result == 0 => {
            summary.failed_allocations += 1;
            Ok(None)
        }
        Waiting::Alloc { size, align } => importer
            .alloc(result, size, align, out)
            .map_err(|_| "more than 2^32 live objects".into()),
    }
}

/// A realloc of `old` to `size` that returned `result`.
fn realloc(
    importer: &mut AddressImporter,
    summary: &mut ValgrindSummary,
    old: u64,
    result: u64,
    size: u64,
    out: &mut Vec<Event>,
) -> Result<Option<AddressIssue>, String> {
    let exhausted = |_| "more than 2^32 live objects".to_string();
    if result == 0 {
        // Failed (or a realloc to 0 printed without its nested free): nothing changed.
        summary.failed_allocations += 1;
        return Ok(None);
    }
    if old == 0 {
        return importer.alloc(result, size, 0, out).map_err(exhausted);
    }
    importer.realloc(old, result, size, out).map_err(exhausted)
}

fn finish_call(
    issue: Option<AddressIssue>,
    options: &ValgrindOptions,
    summary: &mut ValgrindSummary,
    out: &mut Vec<Event>,
    sink: &mut impl FnMut(&Event) -> Result<(), TraceError>,
    err: &impl Fn(String) -> TraceError,
) -> Result<(), TraceError> {
    if let (Some(issue), true) = (issue, options.strict) {
        return Err(err(format!("{issue} (--strict)")));
    }
    for event in out.drain(..) {
        sink(&event)?;
        summary.events += 1;
    }
    Ok(())
}
