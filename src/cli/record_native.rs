//! `fragsim record -o TRACE [--stacks] [--follow-forks] -- PROGRAM ARGS...` with the native
//! recorder (the default; `--with valgrind` is in record.rs).

use super::record::RecordArgs;
use crate::record::rawdir::ChildProcess;
use crate::record::{
    order, record_native_with_progress, EventOrder, NativeOptions, RecordProgress, Recorded,
    RecordedTrace,
};
use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Recorder {
    Native,
    Valgrind,
}

#[derive(Args, Debug)]
pub(crate) struct NativeArgs {
    /// Record each allocation's call stack (native recorder; libunwind).
    #[arg(long)]
    stacks: bool,
    /// Record child processes too, each into TRACE.<pid> (both recorders; under valgrind with
    /// --trace-children=yes, so programs the children exec are recorded as well).
    #[arg(long)]
    pub(super) follow_forks: bool,
    /// Time each call with the TSC (nanoseconds; slower) instead of the kernel's coarse
    /// clock (1-4 ms steps; native recorder).
    #[arg(long)]
    precise_times: bool,
    /// How events are ordered across threads: `seq`, a global sequence number (exact), or
    /// `tsc`, the CPU's time-stamp counter (faster on multi-threaded programs; as exact as
    /// the CPUs' TSCs are synchronised; x86-64 with a constant, nonstop TSC, rdtscp, and the
    /// TSC as the kernel's clocksource); `auto`: `seq` while one thread records, `tsc` from
    /// the second thread on, where the TSC can order events (else `seq`).
    #[arg(long, value_enum, default_value_t = Order::Auto)]
    pub(super) order: Order,
    /// Keep the recorder's raw files in this folder.
    #[arg(long, hide = true)]
    keep_raw: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Order {
    Auto,
    Seq,
    Tsc,
}

pub fn run(args: &RecordArgs) -> Result<i32> {
    let order = match args.native.order {
        Order::Auto => EventOrder::Auto,
        Order::Seq => EventOrder::Seq,
        Order::Tsc => EventOrder::Tsc,
    };
    if order == EventOrder::Tsc {
        if let Some(why) = order::tsc_order_unsupported_here() {
            bail!("--order tsc cannot order events on this machine: {why}; use --order seq");
        }
    }
    let options = NativeOptions {
        stacks: args.native.stacks,
        follow_forks: args.native.follow_forks,
        precise_times: args.native.precise_times,
        order,
        raw_dir: args.native.keep_raw.clone(),
    };
    let mut bar = ConvertBar::new();
    let recorded =
        record_native_with_progress(&args.command, &args.out, &options, &mut |p| bar.update(p));
    bar.done();
    let recorded = recorded?;
    let program = args.command[0].to_string_lossy();
    for line in notes(&recorded, &program) {
        super::output::print_error(&line);
    }
    // The program's own status: its code, or 128 + N when signal N ended it (as a shell does).
    Ok(super::record::exit_status_code(recorded.status))
}

/// `record --convert RAWDIR -o OUT`: the raw files a recording left, converted.
pub fn convert(args: &RecordArgs, dir: &std::path::Path) -> Result<i32> {
    let traces = crate::record::rawdir::convert_dir(dir, &args.out)?;
    for (i, t) in traces.iter().enumerate() {
        for line in trace_notes(t, i, None, false) {
            super::output::print_error(&line);
        }
    }
    Ok(0)
}

/// "recorded N events ... into 'OUT' (B bytes)": `elapsed`, the program's wall time, where
/// it ran just now (not for `--convert`).
fn summary_line(t: &RecordedTrace, elapsed: Option<std::time::Duration>) -> String {
    let s = &t.summary;
    let threads = s.events_per_thread.len();
    let wall = elapsed.map_or(String::new(), |e| format!(" in {:.3} s", e.as_secs_f64()));
    let mut line = format!(
        "recorded {} events ({} allocs, {} frees, {} reallocs) on {} thread{}{wall} (calls over {:.3} s) into '{}' ({} bytes",
        s.events,
        s.allocs,
        s.frees,
        s.reallocs,
        threads,
        if threads == 1 { "" } else { "s" },
        s.duration_ns as f64 / 1e9,
        t.path.display(),
        t.bytes,
    );
    if s.events > 0 {
        line.push_str(&format!(
            ", {:.2} bytes/event",
            t.bytes as f64 / s.events as f64
        ));
    }
    line.push(')');
    if s.sites > 0 {
        line.push_str(&format!("; {} call sites", s.sites));
    }
    if s.controls > 0 {
        line.push_str(&format!(
            "; {} mallctl writes (cache flushes, caches made and ended, purges, arena moves, background threads)",
            s.controls
        ));
    }
    line
}

/// The summary of each trace, then what the user should know about it.
fn notes(recorded: &Recorded, program: &str) -> Vec<String> {
    let mut lines = Vec::new();
    if recorded.no_effect {
        lines.push(format!(
            "warning: LD_PRELOAD had no effect on '{program}' (a static binary, a setuid program or one that clears its environment): the trace is empty"
        ));
    }
    if let Some((symbol, what)) = recorded.linked_allocator {
        lines.push(format!(
            "warning: '{program}' carries its own allocator, {what} (it defines {symbol}): its calls to it bypass the recorder, and the trace holds only the calls that reached the shared malloc; record a build that allocates through the system's malloc (for a Rust program, without a #[global_allocator]; jemalloc as a shared library is recorded, and replayed as the program ran it)"
        ));
    }
    if let Some(interrupt) = recorded.interrupted {
        lines.push(format!(
            "note: {} came while recording: fragsim waited for '{program}' to exit ({}) and wrote everything it recorded",
            interrupt.name(),
            recorded.status
        ));
    }
    for (i, t) in recorded.traces.iter().enumerate() {
        let empty = recorded.no_effect && i == 0;
        lines.extend(trace_notes(t, i, Some(recorded.elapsed), empty));
    }
    let recorded_pids: Vec<u64> = recorded.traces.iter().map(|t| t.pid).collect();
    let unrecorded: Vec<&ChildProcess> = recorded
        .children
        .iter()
        .filter(|c| !recorded_pids.contains(&c.pid))
        .collect();
    if !unrecorded.is_empty() {
        lines.push(unrecorded_line(&unrecorded));
    }
    lines
}

/// Programs listed by name in the line about unrecorded children (the rest are counted).
const PROGRAMS_LISTED: usize = 5;

/// "warning: 3 child processes ran unrecorded: `ls -l` (2), `sed -e s/a/b/`; ...".
fn unrecorded_line(children: &[&ChildProcess]) -> String {
    // Distinct programs in the order they first ran, with how many processes ran each.
    let mut programs: Vec<(String, usize)> = Vec::new();
    for c in children {
        let name = program_name(c);
        match programs.iter_mut().find(|(p, _)| *p == name) {
            Some((_, n)) => *n += 1,
            None => programs.push((name, 1)),
        }
    }
    let mut listed: Vec<String> = programs
        .iter()
        .take(PROGRAMS_LISTED)
        .map(|(p, n)| {
            if *n > 1 {
                format!("{p} ({n})")
            } else {
                p.clone()
            }
        })
        .collect();
    if programs.len() > PROGRAMS_LISTED {
        listed.push(format!(
            "{} more programs",
            programs.len() - PROGRAMS_LISTED
        ));
    }
    let n = children.len();
    format!(
        "warning: {n} child process{} ran unrecorded: {}; record with --follow-forks to record {} too (one trace per process, TRACE.<pid>)",
        if n == 1 { "" } else { "es" },
        listed.join(", "),
        if n == 1 { "it" } else { "them" }
    )
}

/// "fragsim: the program exited and left 1 process running: 4242 `nginx: worker`; ...".
fn waiting_line(left: &[crate::record::reaper::Running]) -> String {
    let one = left.len() == 1;
    let listed: Vec<String> = left
        .iter()
        .take(PROGRAMS_LISTED)
        .map(|r| {
            let mut command = r.command.clone();
            if command.chars().count() > 80 {
                command = command.chars().take(77).collect::<String>() + "...";
            }
            format!("{} `{command}`", r.pid)
        })
        .collect();
    let more = left.len().saturating_sub(PROGRAMS_LISTED);
    format!(
        "fragsim: the program exited and left {} process{} running: {}{}; recording {} until {} exit{} (an interrupt is passed on to {})",
        left.len(),
        if one { "" } else { "es" },
        listed.join(", "),
        if more > 0 { format!(" and {more} more") } else { String::new() },
        if one { "it" } else { "them" },
        if one { "it" } else { "they" },
        if one { "s" } else { "" },
        if one { "it" } else { "them" },
    )
}

/// A child's program for the user: its command line in backquotes (cut at 80 characters),
/// a fork that did not exec marked as such.
fn program_name(c: &ChildProcess) -> String {
    let meta = crate::trace::TraceMeta {
        command: c.command.clone(),
        ..Default::default()
    };
    let mut line = meta.command_line();
    if line.chars().count() > 80 {
        line = line.chars().take(77).collect::<String>() + "...";
    }
    if c.fork_only {
        format!("`{line}` (a fork)")
    } else {
        format!("`{line}`")
    }
}

/// The summary line of trace `i` (0: the program's, then its children's), then what the user
/// should know about it (`empty`: the library did not load, said already).
fn trace_notes(
    t: &RecordedTrace,
    i: usize,
    elapsed: Option<std::time::Duration>,
    empty: bool,
) -> Vec<String> {
    let mut lines = Vec::new();
    let s = &t.summary;
    let mut line = summary_line(t, elapsed);
    if i > 0 {
        let meta = crate::trace::TraceMeta {
            command: t.command.clone(),
            ..Default::default()
        };
        line = match meta.command.is_empty() {
            true => format!("child {}: {line}", t.pid),
            false => format!("child {} (`{}`): {line}", t.pid, meta.command_line()),
        };
    }
    lines.push(line);
    if s.truncated && !empty {
        let how = match s.signal {
            Some(sig) => format!("the process died of signal {sig}"),
            None => "the process was killed before the recorder could finish".to_string(),
        };
        lines.push(format!(
            "warning: trace '{}' is truncated: {how}; it holds the calls written until then",
            t.path.display()
        ));
    }
    if s.issues.total() > 0 {
        lines.push(format!("note: {}", s.issues));
    }
    if s.unseen_execs > 0 {
        lines.push(format!(
            "warning: trace '{}' misses calls: the program replaced itself {} time(s) with an exec the recorder did not see (a direct execve system call, or on a machine other than x86-64 one of execl, execle, execlp); the calls it had not written yet were lost",
            t.path.display(),
            s.unseen_execs
        ));
    }
    if s.released_by_exec > 0 {
        lines.push(format!(
            "note: {} objects still live at exec are freed there",
            s.released_by_exec
        ));
    }
    if s.dropped_threads + s.late_calls + s.lost_bytes > 0 {
        lines.push(format!(
            "warning: not recorded: {} threads (beyond the recorder's 4096 buffers), {} calls after a thread's exit, {} bytes lost writing",
            s.dropped_threads, s.late_calls, s.lost_bytes
        ));
    }
    if let Some(hint) = unnamed_hint(&s.unnamed_frames) {
        lines.push(hint);
    }
    if s.no_unwinder {
        lines.push(
            "warning: --stacks: libunwind.so.8 could not be loaded (install libunwind8): no call stacks recorded".to_string(),
        );
    }
    lines
}

/// One line on the frames of stripped modules left unnamed: which modules (the three with
/// the most), and where names come from.
fn unnamed_hint(unnamed: &[(String, u64)]) -> Option<String> {
    let total: u64 = unnamed.iter().map(|u| u.1).sum();
    if total == 0 {
        return None;
    }
    let mut modules: Vec<String> = unnamed
        .iter()
        .take(3)
        .map(|(m, n)| format!("'{m}' {n}"))
        .collect();
    if unnamed.len() > 3 {
        modules.push(format!("{} more", unnamed.len() - 3));
    }
    Some(format!(
        "note: {total} stack frames have no function name, their modules being stripped ({}): install their debug symbols (Debian: the -dbgsym package, read from /usr/lib/debug/.build-id; or a .gnu_debuglink file beside the binary) or build with symbols, then record again",
        modules.join(", ")
    ))
}

/// On a terminal, a bar over the raw events converted once the program has exited (its own
/// output is over by then); elsewhere nothing.
struct ConvertBar {
    bar: Option<ProgressBar>,
}

impl ConvertBar {
    fn new() -> Self {
        ConvertBar { bar: None }
    }

    fn update(&mut self, p: RecordProgress) {
        match p {
            RecordProgress::Converting { total } if std::io::stderr().is_terminal() => {
                let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template(
                        "writing the trace {bar:30} {binary_bytes}/{binary_total_bytes} of raw events {elapsed}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar.tick();
                self.bar = Some(bar);
            }
            RecordProgress::Converted(bytes) => {
                if let Some(bar) = &self.bar {
                    bar.inc(bytes);
                }
            }
            RecordProgress::Converting { .. } => {}
            RecordProgress::Waiting(left) => {
                self.done();
                eprintln!("{}", waiting_line(&left));
            }
        }
    }

    /// Clears the bar (the summary line follows).
    fn done(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
