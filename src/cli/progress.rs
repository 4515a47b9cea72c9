//! Progress bars for long library steps (a live replay, the report's bump-arena timing),
//! drawn on standard error only when it is a terminal and only once a step has run for a
//! second: a short run prints nothing extra, a long one is never silent.

use crate::live::arena_replay::{replay_compare_with, ArenaTrace, LiveComparison, LiveOptions};
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

/// A bar that stays hidden for its first second (and off a terminal altogether).
struct LaterBar {
    label: &'static str,
    state: Mutex<Option<(ProgressBar, Instant, bool)>>,
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
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some((bar, Instant::now(), false));
    }

    fn advance(&self, n: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((bar, started, shown)) = state.as_mut() {
            bar.inc(n);
            if !*shown && started.elapsed() >= show_after() {
                *shown = true;
                if std::io::stderr().is_terminal() {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                }
            }
        }
    }

    fn finish(&self) {
        if let Some((bar, _, _)) = self.state.lock().unwrap_or_else(|e| e.into_inner()).take() {
            bar.finish_and_clear();
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
    trace: impl Into<ArenaTrace<'a>>,
    options: &LiveOptions,
) -> Result<LiveComparison> {
    replay_compare_with(trace, options, &later_bar("live replay"))
}
