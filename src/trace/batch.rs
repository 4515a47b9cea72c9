//! Calls decoded a batch at a time into reused buffers: the engine's input. The calls sit in
//! one flat slice, so that a consumer takes them as `&[Call]`; the rare thread exits sit beside
//! them by position. Site definitions are not kept (the reader's site table has them).

use super::{Call, Record, ThreadId};

/// A thread's exit in a [`Batch`]: it comes after the batch's first `after` calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    pub after: usize,
    pub thread: ThreadId,
    pub time_ns: Option<u64>,
}

/// Up to a given number of records (calls and thread exits), in trace order.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    calls: Vec<Call>,
    exits: Vec<Exit>,
}

impl Batch {
    /// An empty batch with room for `records` calls.
    pub fn with_capacity(records: usize) -> Self {
        Batch {
            calls: Vec::with_capacity(records),
            exits: Vec::new(),
        }
    }

    pub fn clear(&mut self) {
        self.calls.clear();
        self.exits.clear();
    }

    /// The calls, in order.
    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// The thread exits, in order, each placed among the calls.
    pub fn exits(&self) -> &[Exit] {
        &self.exits
    }

    /// Records held: calls and thread exits.
    pub fn len(&self) -> usize {
        self.calls.len() + self.exits.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.exits.is_empty()
    }

    #[inline(always)]
    pub fn push_call(&mut self, call: Call) {
        self.calls.push(call);
    }

    pub fn push_exit(&mut self, thread: ThreadId, time_ns: Option<u64>) {
        self.exits.push(Exit {
            after: self.calls.len(),
            thread,
            time_ns,
        });
    }

    /// Adds a record (a site definition adds nothing).
    #[inline]
    pub fn push(&mut self, record: Record) {
        match record {
            Record::Call(call) => self.push_call(call),
            Record::ThreadExit { thread, time_ns } => self.push_exit(thread, time_ns),
            Record::Site { .. } => {}
        }
    }

    /// Clears the batch, then moves records from `records` into it until it holds `max` or
    /// the records end; the first error ends the filling (the records before it stay).
    pub fn fill_from<T>(
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
