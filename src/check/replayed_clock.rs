//! The clock a live replay on the trace's clock actually kept. The child sleeps to each
//! event's trace time, but when events come faster than it can run them (the baton between
//! threads, the statistics read at every checkpoint) it falls behind: on python-threads by
//! up to 0.17 s of a 0.3 s trace. jemalloc's clock-driven cache GC reads the wall clock, so a
//! model driven by the trace's times sees fewer 10 ms periods pass than the real allocator
//! did. This rebuilds, from the elapsed time the child reports at each checkpoint, the time
//! each event ran at: inside a span between two checkpoints an event starts at its trace
//! time or when the previous one ends, whichever is later, with one cost per event chosen so
//! that the span ends when the child said (less the statistics read).

use crate::trace::Record;

/// One checkpoint of a live run: events done, then ns since the replay's start after the
/// statistics were read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reported {
    pub event: u64,
    pub elapsed_ns: u64,
}

/// Start times of events `lo..hi` (trace times `times`) from `t_start` with `cost` each;
/// returns when the last one ends.
fn run_span(times: &[u64], t_start: f64, cost: f64, out: Option<&mut Vec<u64>>) -> f64 {
    let mut f = t_start;
    match out {
        Some(out) => {
            for &t in times {
                let s = f.max(t as f64);
                out.push(s.round() as u64);
                f = s + cost;
            }
        }
        None => {
            for &t in times {
                f = f.max(t as f64) + cost;
            }
        }
    }
    f
}

/// The time (ns from the replay's start) each event ran at, for `times` (each event's trace
/// time, ns from the first) and the checkpoints `at` a live run reported. Events after the
/// last checkpoint keep their trace times.
pub(crate) fn replayed_times(times: &[u64], at: &[Reported]) -> Vec<u64> {
    // The statistics read: the least a checkpoint ever took past its last event's time.
    let read = at
        .iter()
        .filter(|c| c.event >= 1 && c.event as usize <= times.len())
        .map(|c| c.elapsed_ns.saturating_sub(times[c.event as usize - 1]))
        .min()
        .unwrap_or(0) as f64;
    let mut out = Vec::with_capacity(times.len());
    let (mut lo, mut t_start) = (0usize, 0.0f64);
    for c in at {
        let hi = (c.event as usize).min(times.len());
        if hi <= lo {
            continue;
        }
        let span = &times[lo..hi];
        let t_end = (c.elapsed_ns as f64 - read).max(t_start);
        // The cost per event that ends the span at t_end (0 if the trace's times alone do).
        let (mut a, mut b) = (0.0f64, (t_end - t_start).max(0.0) / span.len() as f64 + 1.0);
        if run_span(span, t_start, 0.0, None) < t_end {
            for _ in 0..40 {
                let m = 0.5 * (a + b);
                if run_span(span, t_start, m, None) < t_end {
                    a = m;
                } else {
                    b = m;
                }
            }
        } else {
            b = 0.0;
        }
        run_span(span, t_start, b, Some(&mut out));
        t_start = c.elapsed_ns as f64;
        lo = hi;
    }
    out.extend(times[lo..].iter().map(|&t| t.max(t_start.round() as u64)));
    out
}

/// `records` with each call and thread exit stamped with `times` (one per record that is
/// not a site, in order), the first at 0.
pub(crate) fn restamp(records: &[Record], times: &[u64]) -> Vec<Record> {
    let mut k = 0;
    records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            match &mut r {
                Record::Call(c) => {
                    c.time_ns = Some(times[k]);
                    k += 1;
                }
                Record::ThreadExit { time_ns, .. } | Record::Control { time_ns, .. } => {
                    *time_ns = Some(times[k]);
                    k += 1;
                }
                Record::Site { .. } | Record::Mapping { .. } => {}
            }
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_that_kept_up_keeps_the_trace_times() {
        // Checkpoints 100 ns after the last event of their span (the read), every time.
        let times = [0, 1000, 2000, 3000];
        let at = [
            Reported {
                event: 2,
                elapsed_ns: 1100,
            },
            Reported {
                event: 4,
                elapsed_ns: 3100,
            },
        ];
        assert_eq!(replayed_times(&times, &at), vec![0, 1000, 2000, 3000]);
    }

    #[test]
    fn a_replay_that_fell_behind_runs_its_events_back_to_back() {
        // Five events all at trace time 0. The first checkpoint (after event 1) reports 100:
        // the read is min(100 - 0, 4100 - 0) = 100. The second span (events 2-5) starts when
        // the first read ended (100) and ends at 4100 - 100 = 4000: four events of 975 ns
        // back to back, starting at 100, 1075, 2050, 3025 (by hand).
        let times = [0, 0, 0, 0, 0];
        let at = [
            Reported {
                event: 1,
                elapsed_ns: 100,
            },
            Reported {
                event: 5,
                elapsed_ns: 4100,
            },
        ];
        let r = replayed_times(&times, &at);
        assert_eq!(r, vec![0, 100, 1075, 2050, 3025]);
    }
}
