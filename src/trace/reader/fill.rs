//! The reader's batch loop: calls decoded straight into a [`Batch`], one monomorphic loop per
//! file version, without a `Record` or a `Result` per call. A run of ordinary calls is decoded
//! by a tight loop over the buffer (state in locals, committed once per run) that stops,
//! changing nothing for that call, at anything else: a call too close to the buffer's end, a
//! thread switch or exit, a site, the end, a call that breaks a rule. The record-by-record
//! path then redoes that one with full reporting, so batches hold exactly what
//! [`TraceReader::records`] yields.

use super::super::codec::decode_call_fast;
use super::super::format::{decode_event, MAX_EVENT_LEN};
use super::super::ids::LiveSet;
use super::super::{Batch, Call, Event, ObjectId, TraceError};
use super::TraceReader;
use std::io::Read;

impl<R: Read> TraceReader<R> {
    /// Clears `batch`, then fills it with the next records (calls and thread exits) until it
    /// holds `max` or the trace ends. On an error the batch keeps the records before it and
    /// the reader ends, as [`TraceReader::records`] does.
    pub(crate) fn fill_batch(&mut self, batch: &mut Batch, max: usize) -> Result<(), TraceError> {
        batch.clear();
        if self.header.fields.any() {
            self.fill_context(batch, max)
        } else {
            self.fill_plain(batch, max)
        }
    }

    fn fill_plain(&mut self, batch: &mut Batch, max: usize) -> Result<(), TraceError> {
        while batch.len() < max {
            self.plain_run(batch, max);
            if batch.len() == max {
                break;
            }
            match self.next_slow() {
                Some(event) => batch.push_call(Call::plain(event?)),
                None => break,
            }
        }
        Ok(())
    }

    fn fill_context(&mut self, batch: &mut Batch, max: usize) -> Result<(), TraceError> {
        while batch.len() < max {
            self.context_run(batch, max);
            if batch.len() == max || self.done {
                break;
            }
            match self.next_record() {
                Ok(Some(record)) => batch.push(record),
                Ok(None) => break,
                Err(err) => {
                    self.done = true;
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    /// Calls only (versions 2 and 4 without context): the calls that need no refill and pass every check, up to `max` records.
    fn plain_run(&mut self, batch: &mut Batch, max: usize) {
        if self.done || self.header.fields.any() {
            return;
        }
        // A whole event fits from any `pos` up to `limit` (else the record path refills).
        let Some(limit) = self.end.checked_sub(MAX_EVENT_LEN) else {
            return;
        };
        let left = self.left(batch, max);
        let id_limit = self.header.id_limit;
        let buf = &self.buf[..self.end];
        let live = &mut self.live;
        let (mut pos, mut prev, mut n) = (self.pos, self.prev_id, 0);
        while n < left && pos <= limit {
            let Ok((event, len)) = decode_event(&buf[pos..], prev) else {
                break;
            };
            if !take(live, &event, id_limit) {
                break;
            }
            pos += len;
            prev = event.id();
            n += 1;
            batch.push_call(Call::plain(event));
        }
        self.pos = pos;
        self.prev_id = prev;
        self.events_read += n as u64;
    }

    /// With context (versions 3 and 4): the calls on the current thread that pass every check of `next_record`, up
    /// to `max` records.
    fn context_run(&mut self, batch: &mut Batch, max: usize) {
        let thread = self.codec.thread;
        let Some((sites, flow_time)) = self.flow.run_on(thread) else {
            return;
        };
        let payload_end = self.header_len as u64 + self.header.payload_bytes;
        if self.done || self.offset() >= payload_end || self.codec.time_ns < flow_time {
            return;
        }
        let left = self.left(batch, max);
        // The buffer up to the end of the event section.
        let stop = self.end.min((payload_end - self.base) as usize);
        let (fields, id_limit) = (self.header.fields, self.header.id_limit);
        let buf = &self.buf[..stop];
        let live = &mut self.live;
        let (mut pos, mut prev, mut time, mut n) =
            (self.pos, self.codec.prev_id, self.codec.time_ns, 0);
        while n < left && pos < stop {
            let Some((call, len)) = decode_call_fast(&buf[pos..], fields, prev, time, thread)
            else {
                break;
            };
            // Times only grow from `time`, which is not before the flow's: only sites to check
            // (the decoder gives frees none).
            if call.site.is_some_and(|s| s >= sites) || !take(live, &call.event, id_limit) {
                break;
            }
            pos += len;
            prev = call.event.id();
            if let Some(t) = call.time_ns {
                time = t;
            }
            n += 1;
            batch.push_call(call);
        }
        self.pos = pos;
        self.codec.prev_id = prev;
        self.codec.time_ns = time;
        if n > 0 && fields.times {
            self.flow.time_ns = time;
        }
        self.events_read += n as u64;
    }

    /// Calls the batch may still take: room left, and calls left by the header's count.
    fn left(&self, batch: &Batch, max: usize) -> usize {
        let room = max.saturating_sub(batch.len()) as u64;
        self.header
            .events
            .saturating_sub(self.events_read)
            .min(room) as usize
    }
}

/// The object rules for one call (an id below the limit, alloc of a dead id, free or realloc
/// of a live one), applied if they hold; a refused call leaves the set as it was.
#[inline(always)]
fn take(live: &mut LiveSet, event: &Event, id_limit: u64) -> bool {
    let id: ObjectId = event.id();
    if id as u64 >= id_limit {
        return false;
    }
    match event {
        Event::Alloc { .. } => live.insert(id),
        Event::Free { .. } => live.remove(id),
        Event::Realloc { .. } => live.contains(id),
    }
}
