//! Calls decoded a batch at a time into reused buffers: the engine's input. The calls sit in
//! one flat slice, so that a consumer takes them as `&[Call]`; the rare thread exits and
//! allocator mappings sit beside them by position. Site definitions are not kept (the
//! reader's site table has them).

use super::{Call, Control, Record, ThreadId};

/// A record in a [`Batch`] that is not a call: it comes after the batch's first `after`
/// calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Between {
    pub after: usize,
    pub record: BetweenRecord,
}

/// What a `Between` is: [`Record::ThreadExit`] or [`Record::Mapping`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BetweenRecord {
    Exit {
        thread: ThreadId,
        time_ns: Option<u64>,
    },
    Mapping {
        addr: u64,
        len: u64,
    },
    Control {
        thread: ThreadId,
        time_ns: Option<u64>,
        control: Control,
    },
}

/// Up to a given number of records (calls and thread exits), in trace order.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    calls: Vec<Call>,
    between: Vec<Between>,
}

impl Batch {
    /// An empty batch with room for `records` calls.
    pub fn with_capacity(records: usize) -> Self {
        Batch {
            calls: Vec::with_capacity(records),
            between: Vec::new(),
        }
    }

    pub fn clear(&mut self) {
        self.calls.clear();
        self.between.clear();
    }

    /// The calls, in order.
    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// The thread exits and mappings, in order, each placed among the calls.
    pub fn between(&self) -> &[Between] {
        &self.between
    }

    /// Records held: calls, thread exits and mappings.
    pub fn len(&self) -> usize {
        self.calls.len() + self.between.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.between.is_empty()
    }

    #[inline(always)]
    pub(crate) fn push_call(&mut self, call: Call) {
        self.calls.push(call);
    }

    pub(crate) fn push_exit(&mut self, thread: ThreadId, time_ns: Option<u64>) {
        self.between.push(Between {
            after: self.calls.len(),
            record: BetweenRecord::Exit { thread, time_ns },
        });
    }

    /// Adds a record (a site definition adds nothing).
    #[inline]
    pub fn push(&mut self, record: Record) {
        match record {
            Record::Call(call) => self.push_call(call),
            Record::ThreadExit { thread, time_ns } => self.push_exit(thread, time_ns),
            Record::Mapping { addr, len } => self.between.push(Between {
                after: self.calls.len(),
                record: BetweenRecord::Mapping { addr, len },
            }),
            Record::Control {
                thread,
                time_ns,
                control,
            } => self.between.push(Between {
                after: self.calls.len(),
                record: BetweenRecord::Control {
                    thread,
                    time_ns,
                    control,
                },
            }),
            Record::Site { .. } => {}
        }
    }

    /// Clears the batch, then moves records from `records` into it until it holds `max` or
    /// the records end; the first error ends the filling (the records before it stay).
    pub(crate) fn fill_from<T>(
        &mut self,
        records: &mut impl Iterator<Item = Result<Record, T>>,
        max: usize,
    ) -> Result<(), T> {
        self.clear();
        while self.len() < max {
            match records.next() {
                Some(record) => self.push(record?),
                None => break,
            }
        }
        Ok(())
    }
}
