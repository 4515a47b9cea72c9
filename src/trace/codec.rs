//! Version 3's event section: the records of format v2 (calls with thread, time and site;
//! thread exits; site definitions).
//!
//! Every record starts with one varint `tag = X << 3 | kind`:
//! - kinds 0-3 are version 2's calls (`X` = zigzag of the id delta; 0 alloc `size`, 1 free,
//!   2 realloc `size`, 3 aligned alloc `size align`), then, if the trace has sites, for allocs
//!   and reallocs `site + 1` (0: none), then, if it has times, the ns since the previous record;
//! - 4: the following records run on thread `X`;
//! - 5: the current thread exits (`X` = 0), then the time delta if the trace has times;
//! - 6: site `X` is defined: the frame count, then per frame `0 module offset` (a location in a
//!   module named for the first time: it takes the next module number), `1 symbol`, or
//!   `2 + m offset` (a location in module `m`); strings as a length and UTF-8 bytes;
//! - 7 with `X` = 1: the next call is reentrant (made inside another allocator call of its
//!   thread, [`Call::reentrant`]); a reader that does not know it refuses the file; with
//!   `X` = 2, an allocator mapping ([`Record::Mapping`]): its address and length follow; with
//!   `X` = 3, the next call's `MALLOCX_` flags follow ([`Call::mallocx_flags`]); with `X` = 4, a
//!   `mallctl` write of the current thread ([`Record::Control`]): its code and argument
//!   ([`Control::code`]), then the time delta if the trace has times.
//!
//! Thread switches are records of their own, not a field per call, because calls come in runs
//! per thread: a single-threaded v2 trace with times costs one time varint per call more than
//! version 2, and a multi-threaded one a switch per run.

use super::flow::Fields;
use super::format::{event_fields, get_varint, put_varint, DecodeError};
use super::{Call, Control, Event, Frame, ObjectId, Record};

const KIND_SWITCH: u64 = 4;
const KIND_EXIT: u64 = 5;
const KIND_SITE: u64 = 6;
const KIND_MARK: u64 = 7;
/// [`KIND_MARK`]'s `X`: the next call is reentrant.
const MARK_REENTRANT: u64 = 1;
/// [`KIND_MARK`]'s `X`: an allocator mapping, `addr len`.
const MARK_MAPPING: u64 = 2;
/// [`KIND_MARK`]'s `X`: the next call's `MALLOCX_` flags, `flags`.
const MARK_FLAGS: u64 = 3;
/// [`KIND_MARK`]'s `X`: a `mallctl` write, `code arg [time]`.
const MARK_CONTROL: u64 = 4;
/// Longest string of a frame (a module path or a symbol).
pub(crate) const MAX_STRING: usize = 1 << 16;
/// Most frames of one site.
pub(crate) const MAX_FRAMES: usize = 1 << 12;

/// What the encoder and decoder remember between records.
#[derive(Debug, Default, Clone)]
pub(crate) struct CodecState {
    pub prev_id: ObjectId,
    pub thread: u32,
    pub time_ns: u64,
    pub modules: Vec<String>,
}

fn zigzag(delta: i64) -> u64 {
    ((delta << 1) ^ (delta >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Appends one record (already checked against the stream's rules).
pub(crate) fn encode_record(
    out: &mut Vec<u8>,
    record: &Record,
    fields: Fields,
    st: &mut CodecState,
) {
    match record {
        Record::Call(call) => encode_call(out, call, fields, st),
        Record::ThreadExit { thread, time_ns } => {
            let mut put = |v| put_varint(out, v);
            switch_to(&mut put, *thread, st);
            put(KIND_EXIT);
            put_time(&mut put, *time_ns, fields, st);
        }
        Record::Mapping { addr, len } => {
            put_varint(out, MARK_MAPPING << 3 | KIND_MARK);
            put_varint(out, *addr);
            put_varint(out, *len);
        }
        Record::Control {
            thread,
            time_ns,
            control,
        } => {
            let mut put = |v| put_varint(out, v);
            switch_to(&mut put, *thread, st);
            put(MARK_CONTROL << 3 | KIND_MARK);
            let (code, arg) = control.code();
            put(code);
            put(arg);
            put_time(&mut put, *time_ns, fields, st);
        }
        Record::Site { id, frames } => {
            put_varint(out, (*id as u64) << 3 | KIND_SITE);
            put_varint(out, frames.len() as u64);
            for frame in frames {
                match frame {
                    Frame::Symbol(name) => {
                        put_varint(out, 1);
                        put_str(out, name);
                    }
                    Frame::Location { module, offset } => {
                        match st.modules.iter().position(|m| m == module) {
                            Some(m) => put_varint(out, 2 + m as u64),
                            None => {
                                put_varint(out, 0);
                                put_str(out, module);
                                st.modules.push(module.clone());
                            }
                        }
                        put_varint(out, *offset);
                    }
                }
            }
        }
    }
}

/// The longest encoding of one call: a thread switch, the marks, the tag, size, align, site
/// and time (at most 5, 1 + 6, 6, 10, 10, 5 and 10 bytes).
const MAX_CALL: usize = 6 * 10;

/// Appends one call record (already checked). Its varints are written into room reserved
/// once (a reserve per varint, and the call's `match` on the record, were a tenth of a
/// recording's conversion).
#[inline]
pub(crate) fn encode_call(out: &mut Vec<u8>, call: &Call, fields: Fields, st: &mut CodecState) {
    out.reserve(MAX_CALL);
    let len = out.len();
    let spare = &mut out.spare_capacity_mut()[..MAX_CALL];
    let mut n = 0;
    let mut put = |mut v: u64| {
        while v >= 0x80 {
            spare[n].write((v as u8) | 0x80);
            v >>= 7;
            n += 1;
        }
        spare[n].write(v as u8);
        n += 1;
    };
    switch_to(&mut put, call.thread, st);
    if call.reentrant {
        put(MARK_REENTRANT << 3 | KIND_MARK);
    }
    if call.mallocx_flags != 0 {
        put(MARK_FLAGS << 3 | KIND_MARK);
        put(u64::from(call.mallocx_flags));
    }
    let id = call.event.id();
    let tag = |kind: u64| zigzag(id as i64 - st.prev_id as i64) << 3 | kind;
    let free = match call.event {
        Event::Alloc { size, align: 0, .. } => {
            put(tag(0));
            put(size);
            false
        }
        Event::Alloc { size, align, .. } => {
            put(tag(3));
            put(size);
            put(align);
            false
        }
        Event::Free { .. } => {
            put(tag(1));
            true
        }
        Event::Realloc { size, .. } => {
            put(tag(2));
            put(size);
            false
        }
    };
    st.prev_id = id;
    if fields.sites && !free {
        put(call.site.map_or(0, |s| s as u64 + 1));
    }
    put_time(&mut put, call.time_ns, fields, st);
    // SAFETY: the first n bytes of the spare capacity were just written (n <= MAX_CALL: at
    // most six varints of at most 10 bytes).
    unsafe { out.set_len(len + n) };
}

/// The thread switch before a record of `thread`, if it is not the current one; `put` writes
/// a varint (to a vector, or to room `encode_call` reserved).
#[inline(always)]
fn switch_to(put: &mut impl FnMut(u64), thread: u32, st: &mut CodecState) {
    if thread != st.thread {
        put((thread as u64) << 3 | KIND_SWITCH);
        st.thread = thread;
    }
}

#[inline(always)]
fn put_time(put: &mut impl FnMut(u64), time_ns: Option<u64>, fields: Fields, st: &mut CodecState) {
    if fields.times {
        // A call without a time (before a text trace's first `T` line) is at the last time.
        let t = time_ns.unwrap_or(st.time_ns);
        put(t - st.time_ns);
        st.time_ns = t;
    }
}

/// Decodes one record from the front of `buf`; returns it and its length. On `Short` nothing
/// in `st` changed but the current thread (which the retry sets again): the caller refills and
/// retries.
pub(crate) fn decode_record(
    buf: &[u8],
    fields: Fields,
    st: &mut CodecState,
) -> Result<(Record, usize), DecodeError> {
    let mut pos = 0;
    let mut reentrant = false;
    let mut mallocx_flags = 0u32;
    loop {
        let tag = get_varint(buf, &mut pos)?;
        let x = tag >> 3;
        let call_mark = reentrant || mallocx_flags != 0;
        if call_mark && tag & 7 > 3 && !(tag & 7 == KIND_MARK && x == MARK_FLAGS) {
            return Err(DecodeError::Malformed("a call's mark not before a call"));
        }
        match tag & 7 {
            KIND_SWITCH => {
                st.thread = u32::try_from(x)
                    .map_err(|_| DecodeError::Malformed("thread id above 2^32-1"))?;
                continue;
            }
            KIND_EXIT => {
                if x != 0 {
                    return Err(DecodeError::Malformed("thread exit with a payload"));
                }
                let mut time = st.time_ns;
                let time_ns = get_time(buf, &mut pos, fields, &mut time)?;
                st.time_ns = time;
                let thread = st.thread;
                return Ok((Record::ThreadExit { thread, time_ns }, pos));
            }
            KIND_SITE => {
                let id =
                    u32::try_from(x).map_err(|_| DecodeError::Malformed("site id above 2^32-1"))?;
                let mut modules = st.modules.clone();
                let frames = decode_frames(buf, &mut pos, &mut modules)?;
                st.modules = modules;
                return Ok((Record::Site { id, frames }, pos));
            }
            KIND_MARK if x == MARK_REENTRANT => {
                reentrant = true;
                continue;
            }
            KIND_MARK if x == MARK_FLAGS => {
                let f = get_varint(buf, &mut pos)?;
                mallocx_flags = u32::try_from(f)
                    .ok()
                    .filter(|&f| f != 0 && f & 0xff == 0)
                    .ok_or(DecodeError::Malformed("MALLOCX flags outside bits 8-31"))?;
                continue;
            }
            KIND_MARK if x == MARK_MAPPING => {
                let addr = get_varint(buf, &mut pos)?;
                let len = get_varint(buf, &mut pos)?;
                return Ok((Record::Mapping { addr, len }, pos));
            }
            KIND_MARK if x == MARK_CONTROL => {
                let code = get_varint(buf, &mut pos)?;
                let arg = get_varint(buf, &mut pos)?;
                let control = Control::from_code(code, arg)
                    .ok_or(DecodeError::Malformed("an unknown mallctl control"))?;
                let mut time = st.time_ns;
                let time_ns = get_time(buf, &mut pos, fields, &mut time)?;
                st.time_ns = time;
                let thread = st.thread;
                return Ok((
                    Record::Control {
                        thread,
                        time_ns,
                        control,
                    },
                    pos,
                ));
            }
            KIND_MARK => return Err(DecodeError::Malformed("an unknown mark (kind 7)")),
            kind => {
                let Ok(id) = ObjectId::try_from(st.prev_id as i64 + unzigzag(x)) else {
                    return Err(DecodeError::Malformed("object id outside 0..=2^32-1"));
                };
                let event = event_fields(kind, id, buf, &mut pos)?;
                let site = if fields.sites && kind != 1 {
                    match get_varint(buf, &mut pos)? {
                        0 => None,
                        s => Some(
                            u32::try_from(s - 1)
                                .map_err(|_| DecodeError::Malformed("site id above 2^32-1"))?,
                        ),
                    }
                } else {
                    None
                };
                let mut time = st.time_ns;
                let time_ns = get_time(buf, &mut pos, fields, &mut time)?;
                st.time_ns = time;
                st.prev_id = id;
                let call = Call {
                    event,
                    thread: st.thread,
                    time_ns,
                    site,
                    reentrant,
                    mallocx_flags,
                };
                return Ok((Record::Call(call), pos));
            }
        }
    }
}

/// A call record (kinds 0-3) at the front of `buf`, after a call on `prev_id` at `time_ns`, on
/// `thread`: `None` for any other record and for anything [`decode_record`] would refuse or
/// find short, which the caller then decodes with full reporting.
#[inline(always)]
pub(crate) fn decode_call_fast(
    buf: &[u8],
    fields: Fields,
    prev_id: ObjectId,
    time_ns: u64,
    thread: u32,
) -> Option<(Call, usize)> {
    let mut pos = 0;
    let tag = get_varint(buf, &mut pos).ok()?;
    let kind = tag & 7;
    if kind > 3 {
        return None;
    }
    let id = ObjectId::try_from(prev_id as i64 + unzigzag(tag >> 3)).ok()?;
    let event = event_fields(kind, id, buf, &mut pos).ok()?;
    let site = if fields.sites && kind != 1 {
        match get_varint(buf, &mut pos).ok()? {
            0 => None,
            s => Some(u32::try_from(s - 1).ok()?),
        }
    } else {
        None
    };
    let time_ns = if fields.times {
        Some(time_ns.checked_add(get_varint(buf, &mut pos).ok()?)?)
    } else {
        None
    };
    let call = Call {
        event,
        thread,
        time_ns,
        site,
        reentrant: false,
        mallocx_flags: 0,
    };
    Some((call, pos))
}

fn get_time(
    buf: &[u8],
    pos: &mut usize,
    fields: Fields,
    time: &mut u64,
) -> Result<Option<u64>, DecodeError> {
    if !fields.times {
        return Ok(None);
    }
    let delta = get_varint(buf, pos)?;
    *time = time
        .checked_add(delta)
        .ok_or(DecodeError::Malformed("time overflows 64 bits"))?;
    Ok(Some(*time))
}

fn get_str(buf: &[u8], pos: &mut usize) -> Result<String, DecodeError> {
    let len = get_varint(buf, pos)? as usize;
    if len > MAX_STRING {
        return Err(DecodeError::Malformed(
            "a frame's string is longer than 64 KiB",
        ));
    }
    let bytes = buf.get(*pos..*pos + len).ok_or(DecodeError::Short)?;
    *pos += len;
    String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::Malformed("a frame is not UTF-8"))
}

fn decode_frames(
    buf: &[u8],
    pos: &mut usize,
    modules: &mut Vec<String>,
) -> Result<Vec<Frame>, DecodeError> {
    let n = get_varint(buf, pos)? as usize;
    if n > MAX_FRAMES {
        return Err(DecodeError::Malformed("a site with more than 4096 frames"));
    }
    let mut frames = Vec::with_capacity(n);
    for _ in 0..n {
        let frame = match get_varint(buf, pos)? {
            0 => {
                let module = get_str(buf, pos)?;
                modules.push(module.clone());
                Frame::Location {
                    module,
                    offset: get_varint(buf, pos)?,
                }
            }
            1 => Frame::Symbol(get_str(buf, pos)?),
            m => {
                let module = modules
                    .get(m as usize - 2)
                    .cloned()
                    .ok_or(DecodeError::Malformed("a frame names an unknown module"))?;
                Frame::Location {
                    module,
                    offset: get_varint(buf, pos)?,
                }
            }
        };
        frames.push(frame);
    }
    Ok(frames)
}
