//! Progress bars for long library steps (a live replay, advise's models and live checks, the
//! report's bump-arena timing), drawn on standard error once a step has run for a second
//! when it is a terminal; when it is not (a log, a CI job), one line every few seconds
//! instead: a short run prints nothing extra, a long one is never silent.

use crate::analysis::TraceSource;
use crate::charts::thousands;
use crate::check::arena_replay::{replay_compare_with, LiveComparison, LiveOptions};
use crate::progress::{Progress, ProgressObserver};
use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a step runs before its bar appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// [`SHOW_AFTER`], or `FRAGSIM_PROGRESS_AFTER_MS` when set (tests draw at once, whatever
/// the machine's speed).
fn show_after() -> Duration {
    std::env::var("FRAGSIM_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(SHOW_AFTER, Duration::from_millis)
}

/// Off a terminal, a progress line this often.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// [`LINE_EVERY`], or `FRAGSIM_PROGRESS_LINE_MS` when set (tests see a line at once).
fn line_every() -> Duration {
    std::env::var("FRAGSIM_PROGRESS_LINE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(LINE_EVERY, Duration::from_millis)
}

/// A step under way: its bar (hidden until shown), when it began, whether the bar is on
/// the terminal, and when the last line was printed off one.
struct Step {
    bar: ProgressBar,
    what: &'static str,
    started: Instant,
    shown: bool,
    last_line: Instant,
}

/// A bar that stays hidden for its first second (and off a terminal prints lines instead).
struct LaterBar {
    label: &'static str,
    state: Mutex<Option<Step>>,
}

impl LaterBar {
    /// `label: 1,234,567 of 10,000,000 events (12%), 15 s`.
    fn line(&self, step: &Step) -> String {
        let pos = step.bar.position();
        let len = step.bar.length().unwrap_or(0).max(1);
        format!(
            "{}: {} of {} {} ({:.0}%), {} s",
            self.label,
            thousands(pos),
            thousands(len),
            step.what,
            pos as f64 * 100.0 / len as f64,
            step.started.elapsed().as_secs()
        )
    }
}

impl ProgressObserver for LaterBar {
    fn start(&self, what: &'static str, len: u64) {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        let template = format!(
            "{} {{bar:40}} {{human_pos}}/{{human_len}} {what} {{elapsed}} (eta {{eta}})",
            self.label
        );
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style);
        }
        let now = Instant::now();
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(Step {
            bar,
            what,
            started: now,
            shown: false,
            last_line: now,
        });
    }

    fn advance(&self, n: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(step) = state.as_mut() else { return };
        step.bar.inc(n);
        if step.shown || step.started.elapsed() < show_after() {
            return;
        }
        if std::io::stderr().is_terminal() {
            step.shown = true;
            step.bar.set_draw_target(ProgressDrawTarget::stderr());
        } else if step.last_line.elapsed() >= line_every() {
            step.last_line = Instant::now();
            super::output::print_error(&self.line(step));
        }
    }

    fn finish(&self) {
        if let Some(step) = self.state.lock().unwrap_or_else(|e| e.into_inner()).take() {
            step.bar.finish_and_clear();
        }
    }
}

/// A progress observer drawing a bar labelled `label` (see the module's note).
pub(super) fn later_bar(label: &'static str) -> Progress {
    Progress::new(LaterBar {
        label,
        state: Mutex::new(None),
    })
}

/// A live replay with its bar ("live replay ... events").
pub(super) fn replay_compare<'a>(
    trace: impl Into<TraceSource<'a>>,
    options: &LiveOptions,
) -> Result<LiveComparison> {
    replay_compare_with(trace, options, &later_bar("live replay"))
}
