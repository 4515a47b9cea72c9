//! Import of `valgrind --trace-malloc=yes` logs (memcheck, checked against valgrind 3.19).
//!
//! Each call is one line `--PID-- NAME(ARGS) = RESULT`, e.g. `malloc(24) = 0x4A5B040`,
//! `calloc(3,8) = 0x..`, `realloc(0x4A5B040,100) = 0x..`, `memalign(al 64, size 100) = 0x..`
//! (also what posix_memalign, aligned_alloc and valloc print),
//! `_ZnwmSt11align_val_t(size 128, al 64) = 0x..`, `free(0x..)`, `_ZdlPvm(0x..)`. Two forms
//! nest: `realloc(0x0,10)malloc(10) = 0x..` (a realloc of null is a malloc) and
//! `realloc(0x..,0)free(0x..)` followed by a line ` = 0` (a realloc to 0 frees); the inner call
//! is what happened, so it is the one imported. Lines of other kinds (`==PID==` messages,
//! program output, other `--PID--` lines) are skipped; `free(0x0)` is ignored.

use super::addr::{AddressImporter, AddressIssue, IssueCounts};
use super::{Event, TraceError};
use std::collections::BTreeSet;
use std::io::BufRead;

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
    pub issues: IssueCounts,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `name(N)`.
    Sized,
    /// `calloc(N,S)`.
    Calloc,
    /// `name(al A, size N)` or `name(size N, al A)`.
    Aligned,
    /// `realloc(P,N)`.
    Realloc,
    /// `reallocarray(P,N,S)` (valgrind 3.20+).
    ReallocArray,
    /// `name(P)`.
    Free,
}

fn classify(name: &str) -> Option<Kind> {
    // operator new / new[] in their 64- and 32-bit manglings, plain, nothrow and aligned.
    if name.starts_with("_Znw") || name.starts_with("_Zna") {
        return Some(if name.contains("align_val_t") {
            Kind::Aligned
        } else {
            Kind::Sized
        });
    }
    if name.starts_with("_Zdl") || name.starts_with("_Zda") {
        return Some(Kind::Free);
    }
    Some(match name {
        "malloc" | "__builtin_new" | "__builtin_vec_new" => Kind::Sized,
        "calloc" => Kind::Calloc,
        "memalign" | "posix_memalign" | "aligned_alloc" | "valloc" | "pvalloc" => Kind::Aligned,
        "realloc" => Kind::Realloc,
        "reallocarray" => Kind::ReallocArray,
        "free" | "cfree" | "__builtin_delete" | "__builtin_vec_delete" => Kind::Free,
        _ => return None,
    })
}

/// One parsed `NAME(ARGS)` and what follows it on the line.
struct Call<'a> {
    name: &'a str,
    args: &'a str,
    rest: &'a str,
}

fn split_call(text: &str) -> Option<Call<'_>> {
    let open = text.find('(')?;
    let name = &text[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let close = open + text[open..].find(')')?;
    Some(Call {
        name,
        args: &text[open + 1..close],
        rest: &text[close + 1..],
    })
}

/// `--PID-- BODY` -> (PID, BODY).
fn split_prefix(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix("--")?;
    let end = rest.find("--")?;
    let pid = rest[..end].parse().ok()?;
    Some((pid, &rest[end + 2..]))
}

fn parse_u64(text: &str, what: &str) -> Result<u64, String> {
    let t = text.trim();
    t.parse()
        .map_err(|_| format!("{what} '{t}' does not parse as an integer"))
}

fn parse_addr(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let parsed = match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None if t == "0" || t == "(nil)" => Some(0),
        None => None,
    };
    parsed.ok_or_else(|| format!("address '{t}' does not parse"))
}

fn parse_result(rest: &str) -> Result<Option<u64>, String> {
    match rest.trim().strip_prefix('=') {
        Some(r) => parse_addr(r).map(Some),
        None => Ok(None),
    }
}

/// `al A, size N` in either order -> (align, size).
fn keyed_args(args: &str) -> Result<(u64, u64), String> {
    let (mut align, mut size) = (None, None);
    for part in args.split(',') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("al ") {
            align = Some(parse_u64(v, "alignment")?);
        } else if let Some(v) = part.strip_prefix("size ") {
            size = Some(parse_u64(v, "size")?);
        } else {
            return Err(format!("unexpected argument '{part}'"));
        }
    }
    match (align, size) {
        (Some(a), Some(s)) => Ok((a, s)),
        _ => Err(format!("expected 'al A, size N', got '{args}'")),
    }
}

fn two_args(args: &str) -> Result<(&str, &str), String> {
    args.split_once(',')
        .ok_or_else(|| format!("expected two arguments, got '{args}'"))
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
    // A realloc whose result comes on a later ` = R` line: (old address, size).
    let mut pending: Option<(u64, u64)> = None;
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
        match chosen {
            None => chosen = Some(pid),
            Some(p) if p == pid => {}
            Some(p) if options.pid.is_some() => {
                let _ = p;
                continue;
            }
            Some(p) => {
                let pids = all_pids(p, pid, &mut input);
                let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
                return Err(TraceError::Input {
                    file: name.to_string(),
                    what: format!(
                        "the log has lines of {} processes (PIDs {}): choose one with --pid",
                        pids.len(),
                        list.join(", ")
                    ),
                });
            }
        }
        let mut text = body.trim_start();
        if text.starts_with('=') {
            // The result of a call printed on an earlier line.
            if let Some((old, size)) = pending.take() {
                let result = parse_result(text).map_err(err)?.unwrap_or(0);
                let issue = realloc(&mut importer, &mut summary, old, result, size, &mut out)
                    .map_err(err)?;
                finish_call(issue, options, &mut summary, &mut out, &mut sink, &err)?;
            }
            continue;
        }
        pending = None;
        // A call followed directly by another: the inner one is what happened.
        let call = loop {
            let Some(call) = split_call(text) else {
                break None;
            };
            match split_call(call.rest) {
                Some(inner) if classify(inner.name).is_some() => text = call.rest,
                _ => break Some(call),
            }
        };
        let Some(call) = call else {
            continue;
        };
        let Some(kind) = classify(call.name) else {
            summary.other_calls += 1;
            continue;
        };
        summary.calls += 1;
        let result = parse_result(call.rest).map_err(err)?;
        let issue: Option<AddressIssue> = match kind {
            Kind::Free => {
                let addr = parse_addr(call.args).map_err(err)?;
                if addr == 0 {
                    summary.null_frees += 1;
                    None
                } else {
                    importer.free(addr, &mut out)
                }
            }
            Kind::Realloc | Kind::ReallocArray => {
                let (old, size) = if kind == Kind::Realloc {
                    let (p, n) = two_args(call.args).map_err(err)?;
                    (
                        parse_addr(p).map_err(err)?,
                        parse_u64(n, "size").map_err(err)?,
                    )
                } else {
                    let mut parts = call.args.splitn(3, ',');
                    let p = parse_addr(parts.next().unwrap_or("")).map_err(err)?;
                    let n = parse_u64(parts.next().unwrap_or(""), "count").map_err(err)?;
                    let s = parse_u64(parts.next().unwrap_or(""), "size").map_err(err)?;
                    let size = n
                        .checked_mul(s)
                        .ok_or_else(|| err(format!("size {n} x {s} overflows")))?;
                    (p, size)
                };
                match result {
                    Some(result) => {
                        realloc(&mut importer, &mut summary, old, result, size, &mut out)
                            .map_err(err)?
                    }
                    None => {
                        pending = Some((old, size));
                        continue;
                    }
                }
            }
            Kind::Sized | Kind::Calloc | Kind::Aligned => {
                let (size, align) = match kind {
                    Kind::Sized => (parse_u64(call.args, "size").map_err(err)?, 0),
                    Kind::Calloc => {
                        let (n, s) = two_args(call.args).map_err(err)?;
                        let (n, s) = (
                            parse_u64(n, "count").map_err(err)?,
                            parse_u64(s, "size").map_err(err)?,
                        );
                        let size = n
                            .checked_mul(s)
                            .ok_or_else(|| err(format!("size {n} x {s} overflows")))?;
                        (size, 0)
                    }
                    _ => {
                        let (align, size) = keyed_args(call.args).map_err(err)?;
                        (size, align)
                    }
                };
                match result {
                    None => {
                        return Err(err(format!("'{}' has no result ('= ADDRESS')", call.name)))
                    }
                    Some(0) => {
                        summary.failed_allocations += 1;
                        None
                    }
                    Some(addr) => importer
                        .alloc(addr, size, align, &mut out)
                        .map_err(|_| err("more than 2^32 live objects".into()))?,
                }
            }
        };
        finish_call(issue, options, &mut summary, &mut out, &mut sink, &err)?;
    }
    if summary.calls == 0 {
        return Err(TraceError::Input {
            file: name.to_string(),
            what: "no allocation calls found (expected the output of valgrind --trace-malloc=yes)"
                .into(),
        });
    }
    summary.pid = chosen.unwrap_or(0);
    summary.issues = importer.issues;
    Ok(summary)
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
