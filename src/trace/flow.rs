//! The consistency rules of a v2 stream's context, kept by every writer and reader: threads
//! dense and never reused after their exit, times non-decreasing, sites defined in order before
//! use. (Object rules are [`super::tally::Tally`]'s.)

use super::{Call, Event, Record, SiteId, ThreadId};

/// Which context a v2 trace carries; a trace with none of them is written as v1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Fields {
    pub threads: bool,
    pub times: bool,
    pub sites: bool,
}

impl Fields {
    pub const NONE: Fields = Fields {
        threads: false,
        times: false,
        sites: false,
    };
    pub const ALL: Fields = Fields {
        threads: true,
        times: true,
        sites: true,
    };

    pub fn any(self) -> bool {
        self.threads || self.times || self.sites
    }

    pub(crate) fn bits(self) -> u64 {
        self.threads as u64 | (self.times as u64) << 1 | (self.sites as u64) << 2
    }

    pub(crate) fn from_bits(bits: u64) -> Option<Fields> {
        (bits < 8).then_some(Fields {
            threads: bits & 1 != 0,
            times: bits & 2 != 0,
            sites: bits & 4 != 0,
        })
    }

    /// The fields a record needs.
    pub fn of(record: &Record) -> Fields {
        match record {
            // A reentrant call's mark is written in the threads' format (version 3).
            Record::Call(c) => Fields {
                threads: c.thread != 0 || c.reentrant || c.mallocx_flags != 0,
                times: c.time_ns.is_some(),
                sites: c.site.is_some(),
            },
            Record::ThreadExit { time_ns, .. } => Fields {
                threads: true,
                times: time_ns.is_some(),
                sites: false,
            },
            Record::Site { .. } => Fields {
                threads: false,
                times: false,
                sites: true,
            },
            // Written as a mark (version 3, the threads' format).
            Record::Mapping { .. } => Fields {
                threads: true,
                times: false,
                sites: false,
            },
            Record::Control { time_ns, .. } => Fields {
                threads: true,
                times: time_ns.is_some(),
                sites: false,
            },
        }
    }

    pub(crate) fn union(self, other: Fields) -> Fields {
        Fields {
            threads: self.threads || other.threads,
            times: self.times || other.times,
            sites: self.sites || other.sites,
        }
    }
}

/// The state of a [`Flow`] before a record ([`Flow::mark`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlowMark {
    threads: u32,
    thread_exits: u64,
    time_ns: u64,
    sites: u32,
    thread: ThreadId,
}

/// The running context of a stream and its counts.
#[derive(Clone, Debug)]
pub(crate) struct Flow {
    pub fields: Fields,
    /// Threads seen so far (thread 0 always exists).
    pub threads: u32,
    exited: Vec<bool>,
    pub thread_exits: u64,
    /// The time of the latest record (0 before the first).
    pub time_ns: u64,
    pub sites: u32,
    /// The thread of the latest record.
    pub thread: ThreadId,
}

impl Flow {
    pub fn new(fields: Fields) -> Self {
        Flow {
            fields,
            threads: 1,
            exited: vec![false],
            thread_exits: 0,
            time_ns: 0,
            sites: 0,
            thread: 0,
        }
    }

    #[inline]
    fn thread(&mut self, thread: ThreadId) -> Result<(), String> {
        if thread != 0 && !self.fields.threads {
            return Err(format!("thread {thread} in a trace without threads"));
        }
        if thread > self.threads {
            return Err(format!(
                "thread {thread} skips ids: threads are numbered in order of first appearance (the next new thread is {})",
                self.threads
            ));
        }
        if thread == self.threads {
            self.threads += 1;
            self.exited.push(false);
        }
        if self.exited[thread as usize] {
            return Err(format!("thread {thread} acts after its exit"));
        }
        self.thread = thread;
        Ok(())
    }

    #[inline]
    fn time(&mut self, time_ns: Option<u64>) -> Result<(), String> {
        let Some(t) = time_ns else { return Ok(()) };
        if !self.fields.times {
            return Err(format!("time {t} ns in a trace without times"));
        }
        if t < self.time_ns {
            return Err(format!(
                "time {t} ns is before the previous time {} ns (times never decrease)",
                self.time_ns
            ));
        }
        self.time_ns = t;
        Ok(())
    }

    #[inline]
    fn site(&self, site: Option<SiteId>, event: &Event) -> Result<(), String> {
        let Some(s) = site else { return Ok(()) };
        if matches!(event, Event::Free { .. }) {
            return Err(format!("a free with a call site (@{s})"));
        }
        if s >= self.sites {
            return Err(format!(
                "site {s} used before it is defined ({} sites so far)",
                self.sites
            ));
        }
        Ok(())
    }

    /// What [`Flow::undo`] needs to take back the records applied after it (cheaper than a
    /// clone: no allocation per record).
    pub fn mark(&self) -> FlowMark {
        FlowMark {
            threads: self.threads,
            thread_exits: self.thread_exits,
            time_ns: self.time_ns,
            sites: self.sites,
            thread: self.thread,
        }
    }

    /// Back to `mark`, taken before one record (a refused record changes nothing: only a
    /// thread exit marks a thread exited, and it does so last).
    pub(crate) fn undo(&mut self, mark: FlowMark) {
        self.exited.truncate(mark.threads as usize);
        self.threads = mark.threads;
        self.thread_exits = mark.thread_exits;
        self.time_ns = mark.time_ns;
        self.sites = mark.sites;
        self.thread = mark.thread;
    }

    /// Applies a call's context (the object rules are checked apart).
    // Inlined into the writer: the three checks of a call were three calls each.
    #[inline]
    pub fn call(&mut self, call: &Call) -> Result<(), String> {
        self.site(call.site, &call.event)?;
        self.thread(call.thread)?;
        self.time(call.time_ns)
    }

    /// For a run of calls on `thread` that change nothing but the time: the sites defined
    /// and the latest time, if `thread` is the current thread and alive (then a call passes
    /// [`Flow::call`] when its site is below those sites, it is no free with a site, and its
    /// time is not before that time). The reader's fast path asks this once per run.
    #[inline]
    pub(crate) fn run_on(&self, thread: ThreadId) -> Option<(u32, u64)> {
        (thread == self.thread && !self.exited[thread as usize])
            .then_some((self.sites, self.time_ns))
    }

    /// As [`Flow::run_on`] for a call on any thread seen before and alive, the current one
    /// or not (what [`Flow::thread`] lets through without a change but the current thread,
    /// which the caller sets once the call is taken). Nothing changes here: a call refused
    /// after this leaves the flow as it was.
    #[inline]
    pub(crate) fn run_or_switch(&self, thread: ThreadId) -> Option<(u32, u64)> {
        let known = thread == self.thread
            || (thread < self.threads && (thread == 0 || self.fields.threads));
        (known && !self.exited[thread as usize]).then_some((self.sites, self.time_ns))
    }

    /// Applies a record that is not a call.
    #[inline]
    pub fn other(&mut self, record: &Record) -> Result<(), String> {
        match record {
            Record::Call(call) => self.call(call),
            Record::ThreadExit { thread, time_ns } => {
                self.thread(*thread)?;
                self.time(*time_ns)?;
                self.exited[*thread as usize] = true;
                self.thread_exits += 1;
                Ok(())
            }
            Record::Site { id, .. } => {
                if !self.fields.sites {
                    return Err(format!("site {id} defined in a trace without sites"));
                }
                if *id != self.sites {
                    return Err(format!(
                        "site {id} defined out of order (the next site is {})",
                        self.sites
                    ));
                }
                self.sites += 1;
                Ok(())
            }
            Record::Mapping { .. } => Ok(()),
            Record::Control {
                thread, time_ns, ..
            } => {
                self.thread(*thread)?;
                self.time(*time_ns)
            }
        }
    }
}
