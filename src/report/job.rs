//! How the report's sections run: in lanes. A lane is a list of sections run in order in one
//! thread (a later section may use an earlier one's value). Lanes whose outputs are exact
//! (models, jemalloc's statistics, file contents) run beside each other on a few worker
//! threads ([`Load::Shared`]); lanes that measure times or resident bytes run one at a time
//! with nothing else of the report running ([`Load::Alone`]), after the shared ones (whose
//! quick first sections then fail early, if they fail), so that the report's own load never
//! reaches their figures.
//!
//! The index and the steps follow the order the lanes were given in, not the order they
//! finished in, so the index is the same whatever the scheduling; the caller hears of each
//! step as it finishes.

use super::{SectionOutput, Step};
use anyhow::{Context, Result};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

/// Whether a lane may run beside others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// Its files do not depend on the machine's load: run beside other shared lanes.
    Shared,
    /// It measures times or bytes another lane's work would disturb: run with no other lane.
    Alone,
}

/// A lane's sections, run in one thread in order.
pub struct Lane<'a> {
    dir: &'a Path,
    index: Index,
    steps: Vec<Step>,
    tell: &'a mut dyn FnMut(&Step) -> Result<()>,
}

impl Lane<'_> {
    /// Runs one step, named `name` on the terminal, whose files go under `heading` in the
    /// index (steps with the same heading share it).
    pub fn section(
        &mut self,
        name: &str,
        heading: &str,
        run: impl FnOnce(&Path) -> Result<SectionOutput>,
    ) -> Result<()> {
        self.section_with(name, heading, |dir| Ok(((), run(dir)?)))
    }

    /// [`Lane::section`] for a step whose value later steps need: returns that value.
    pub fn section_with<T>(
        &mut self,
        name: &str,
        heading: &str,
        run: impl FnOnce(&Path) -> Result<(T, SectionOutput)>,
    ) -> Result<T> {
        let start = Instant::now();
        let (value, output) = run(self.dir).with_context(|| format!("step '{name}'"))?;
        let step = Step {
            name: name.to_string(),
            took: start.elapsed(),
            files: output.files.iter().map(|w| w.file.clone()).collect(),
        };
        (self.tell)(&step)?;
        self.steps.push(step);
        self.index.push((heading.to_string(), output));
        Ok(value)
    }
}

/// What a lane runs.
pub(crate) type LaneFn<'a> = Box<dyn FnOnce(&mut Lane) -> Result<()> + Send + 'a>;

/// The sections of a whole job, grouped in lanes.
pub(crate) struct Plan<'a> {
    lanes: Vec<(Load, LaneFn<'a>)>,
}

/// The index: each heading with its sections' files and Markdown.
pub type Index = Vec<(String, SectionOutput)>;

/// One lane's results (or the whole job's): its index and its steps.
type Done = (Index, Vec<Step>);

impl<'a> Plan<'a> {
    pub fn new() -> Self {
        Plan { lanes: Vec::new() }
    }

    /// Adds a lane; its sections come after those of the lanes added before, in the index.
    pub(crate) fn lane(
        &mut self,
        load: Load,
        run: impl FnOnce(&mut Lane) -> Result<()> + Send + 'a,
    ) {
        self.lanes.push((load, Box::new(run)));
    }

    /// Runs every lane: the shared ones on up to `workers` threads (at least 1), in the order
    /// given as threads come free, then the [`Load::Alone`] ones one after another in this
    /// thread. Returns the index (steps with one heading merged) and the steps, in the
    /// order of the lanes; the first error stops the job once the running lanes end.
    pub fn run(
        self,
        dir: &Path,
        workers: usize,
        on_step: &mut dyn FnMut(&Step) -> Result<()>,
    ) -> Result<(Index, Vec<Step>)> {
        let count = self.lanes.len();
        let mut done: Vec<Option<Done>> = (0..count).map(|_| None).collect();
        let (alone, shared): (Vec<_>, Vec<_>) = self
            .lanes
            .into_iter()
            .enumerate()
            .partition(|(_, (load, _))| *load == Load::Alone);
        for (at, result) in run_shared(dir, shared, workers, on_step)? {
            done[at] = Some(result);
        }
        for (at, (_, run)) in alone {
            done[at] = Some(run_lane(dir, run, on_step)?);
        }
        let mut index: Index = Vec::new();
        let mut steps = Vec::new();
        for (sections, lane_steps) in done.into_iter().flatten() {
            steps.extend(lane_steps);
            for (heading, output) in sections {
                match index.iter_mut().find(|(h, _)| *h == heading) {
                    Some((_, section)) => {
                        section.files.extend(output.files);
                        section.markdown.push_str(&output.markdown);
                    }
                    None => index.push((heading, output)),
                }
            }
        }
        Ok((index, steps))
    }
}

impl Default for Plan<'_> {
    fn default() -> Self {
        Self::new()
    }
}

fn run_lane(dir: &Path, run: LaneFn, tell: &mut dyn FnMut(&Step) -> Result<()>) -> Result<Done> {
    let mut lane = Lane {
        dir,
        index: Vec::new(),
        steps: Vec::new(),
        tell,
    };
    run(&mut lane)?;
    Ok((lane.index, lane.steps))
}

/// The shared lanes on `workers` threads; this thread passes their steps to `on_step`
/// (which need not be `Send`). Results come back with each lane's place in the plan.
fn run_shared(
    dir: &Path,
    lanes: Vec<(usize, (Load, LaneFn))>,
    workers: usize,
    on_step: &mut dyn FnMut(&Step) -> Result<()>,
) -> Result<Vec<(usize, Done)>> {
    let queue: Vec<Mutex<Option<(usize, LaneFn)>>> = lanes
        .into_iter()
        .map(|(at, (_, run))| Mutex::new(Some((at, run))))
        .collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let results = Mutex::new(Vec::new());
    let mut first_error = None;
    std::thread::scope(|scope| {
        let (sender, steps) = mpsc::channel::<Step>();
        for _ in 0..workers.clamp(1, queue.len().max(1)) {
            let sender = sender.clone();
            let (queue, next, stop, results) = (&queue, &next, &stop, &results);
            scope.spawn(move || {
                let mut tell = |step: &Step| {
                    sender
                        .send(step.clone())
                        .map_err(|_| anyhow::anyhow!("the report stopped"))
                };
                while !stop.load(Ordering::SeqCst) {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(slot) = queue.get(i) else { break };
                    let taken = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                    let Some((at, run)) = taken else { continue };
                    let result = run_lane(dir, run, &mut tell);
                    if result.is_err() {
                        stop.store(true, Ordering::SeqCst);
                    }
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((at, result));
                }
            });
        }
        // The workers hold the only senders left: the loop ends when the last one is done.
        drop(sender);
        for step in steps {
            if first_error.is_none() {
                if let Err(e) = on_step(&step) {
                    stop.store(true, Ordering::SeqCst);
                    first_error = Some(e);
                }
            }
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(at, _)| *at);
    let mut out = Vec::with_capacity(results.len());
    for (at, result) in results {
        match result {
            Ok(done) => out.push((at, done)),
            // The lane first in the plan that failed, unless the caller already stopped.
            Err(e) => return Err(first_error.unwrap_or(e)),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{index_markdown, Written};
    use std::time::Duration;

    fn file(name: &str) -> Written {
        Written {
            file: name.into(),
            what: format!("about {name}"),
        }
    }

    /// A plugged-in section: files listed (tables, then charts), then its Markdown; a second
    /// step under the same heading adds to it, and a lane's value reaches its next step.
    #[test]
    fn sections_under_one_heading_merge_and_keep_their_markdown() {
        let dir = tempfile::tempdir().unwrap();
        let mut seen = Vec::new();
        let mut plan = Plan::new();
        plan.lane(Load::Shared, |lane| {
            let value = lane.section_with("first", "Traces", |_| {
                Ok((
                    7,
                    SectionOutput {
                        files: vec![file("charts/t.png"), file("charts/t.svg"), file("t.csv")],
                        markdown: "Seven traces.\n".into(),
                    },
                ))
            })?;
            assert_eq!(value, 7);
            Ok(())
        });
        plan.lane(Load::Shared, |lane| {
            lane.section("second", "Traces", |_| {
                Ok(SectionOutput::files(vec![file("u.md")]))
            })
        });
        let (index, steps) = plan
            .run(dir.path(), 1, &mut |step| {
                seen.push(step.name.clone());
                Ok(())
            })
            .unwrap();
        let index = index_markdown(&index);
        let expected = "\n## Traces\n\n- [t.csv](t.csv): about t.csv\n- [u.md](u.md): about u.md\n\n![charts/t](charts/t.png)\n\nabout charts/t.png ([SVG](charts/t.svg))\n\nSeven traces.\n";
        assert!(index.ends_with(expected), "{index}");
        assert_eq!(seen, ["first", "second"]);
        assert_eq!(steps.len(), 2);
    }

    /// Two shared lanes run at once (the first waits for the second, which would time out
    /// if they ran one after the other), yet the index keeps the plan's order; the lane run
    /// alone saw no shared lane running.
    #[test]
    fn shared_lanes_overlap_alone_lanes_do_not_and_the_index_keeps_the_plan_order() {
        let dir = tempfile::tempdir().unwrap();
        let running = AtomicUsize::new(0);
        let (signal, wait) = mpsc::channel::<()>();
        let wait = Mutex::new(wait);
        let mut plan = Plan::new();
        let section = |name: &'static str| {
            move |_: &Path| Ok(SectionOutput::files(vec![file(&format!("{name}.md"))]))
        };
        let (running, wait) = (&running, &wait);
        plan.lane(Load::Shared, move |lane| {
            running.fetch_add(1, Ordering::SeqCst);
            let got = wait.lock().unwrap().recv_timeout(Duration::from_secs(30));
            running.fetch_sub(1, Ordering::SeqCst);
            assert!(got.is_ok(), "the second lane did not run beside the first");
            lane.section("a", "A", section("a"))
        });
        plan.lane(Load::Alone, move |lane| {
            assert_eq!(running.load(Ordering::SeqCst), 0);
            lane.section("b", "B", section("b"))
        });
        plan.lane(Load::Shared, move |lane| {
            running.fetch_add(1, Ordering::SeqCst);
            lane.section("c", "C", section("c"))?;
            signal.send(()).unwrap();
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        });
        let mut seen = Vec::new();
        let (index, steps) = plan
            .run(dir.path(), 2, &mut |step| {
                seen.push(step.name.clone());
                Ok(())
            })
            .unwrap();
        let headings: Vec<&str> = index.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(headings, ["A", "B", "C"]);
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        // Heard as they finished: c before a, then the alone lane.
        assert_eq!(seen, ["c", "a", "b"]);
    }

    /// A failing section stops the job with its step named; lanes not yet started do not run.
    #[test]
    fn a_failing_lane_stops_the_job_and_names_its_step() {
        let dir = tempfile::tempdir().unwrap();
        let ran_after = AtomicBool::new(false);
        let mut plan = Plan::new();
        plan.lane(Load::Shared, |lane| {
            lane.section("broken", "X", |_| anyhow::bail!("no such file"))
        });
        plan.lane(Load::Shared, |lane| {
            ran_after.store(true, Ordering::SeqCst);
            lane.section("later", "Y", |_| Ok(SectionOutput::default()))
        });
        let error = plan.run(dir.path(), 1, &mut |_| Ok(())).unwrap_err();
        assert_eq!(
            format!("{error:#}"),
            "step 'broken': no such file",
            "{error:#}"
        );
        assert!(!ran_after.load(Ordering::SeqCst));
    }
}
