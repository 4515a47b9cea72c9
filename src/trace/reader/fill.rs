//! The reader's batch loop: calls decoded straight into a [`Batch`], one monomorphic loop per
//! file version, without a `Record` or a `Result` per call. Each call first tries a fast path
//! that changes nothing unless every check passes; anything else (a refill, a thread switch or
//! exit, a site, the end, an error) takes the record-by-record path, which redoes it with full
//! reporting, so batches hold exactly what [`TraceReader::records`] yields.

use super::super::codec::decode_call_fast;
use super::super::format::VERSION_CONTEXT;
use super::super::{Batch, Call, Event, TraceError};
use super::TraceReader;
use std::io::Read;

impl<R: Read> TraceReader<R> {
    /// Clears `batch`, then fills it with the next records (calls and thread exits) until it
    /// holds `max` or the trace ends. On an error the batch keeps the records before it and
    /// the reader ends, as [`TraceReader::records`] does.
    pub fn fill_batch(&mut self, batch: &mut Batch, max: usize) -> Result<(), TraceError> {
        batch.clear();
        if self.header.version == VERSION_CONTEXT {
            self.fill_context(batch, max)
        } else {
            self.fill_plain(batch, max)
        }
    }

    fn fill_plain(&mut self, batch: &mut Batch, max: usize) -> Result<(), TraceError> {
        while batch.len() < max {
            let event = match self.next_fast() {
                Some(event) => event,
                None => match self.next_slow() {
                    Some(event) => event?,
                    None => break,
                },
            };
            batch.push_call(Call::plain(event));
        }
        Ok(())
    }

    fn fill_context(&mut self, batch: &mut Batch, max: usize) -> Result<(), TraceError> {
        while batch.len() < max {
            if let Some(call) = self.next_call_fast() {
                batch.push_call(call);
                continue;
            }
            if self.done {
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

    /// Version 3: a call on the current thread that passes every check of `next_record`,
    /// committed; `None` (nothing changed) sends the caller to `next_record`.
    #[inline(always)]
    fn next_call_fast(&mut self) -> Option<Call> {
        if self.done || self.events_read >= self.header.events {
            return None;
        }
        let start = self.offset();
        let payload_end = self.header_len as u64 + self.header.payload_bytes;
        if start >= payload_end {
            return None;
        }
        let avail = (self.end - self.pos).min((payload_end - start) as usize);
        let buf = &self.buf[self.pos..self.pos + avail];
        let (call, len) = decode_call_fast(buf, self.header.fields, &self.codec)?;
        if !self.flow.accepts_in_place(&call) {
            return None;
        }
        let id = call.event.id();
        if id as u64 >= self.header.id_limit {
            return None;
        }
        // A refused check leaves the set as it was.
        let consistent = match call.event {
            Event::Alloc { .. } => self.live.insert(id),
            Event::Free { .. } => self.live.remove(id),
            Event::Realloc { .. } => self.live.contains(id),
        };
        if !consistent {
            return None;
        }
        self.pos += len;
        self.codec.prev_id = id;
        if let Some(t) = call.time_ns {
            self.codec.time_ns = t;
            self.flow.time_ns = t;
        }
        self.events_read += 1;
        Some(call)
    }
}

