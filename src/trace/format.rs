//! The binary layout: a fixed header, then the events as LEB128 varints.
//!
//! Header (little-endian): magic `FSIMTRC\0`, version u32, header length u32, then the u64
//! counts of [`TraceHeader`] in field order (88 bytes); version 3 adds the context (flags,
//! threads, thread exits, sites, duration: 128 bytes); version 4, the one written, has version
//! 3's fields (flags 0: calls only, version 2's events) and the CRC-32 of those 128 bytes
//! (132 bytes), and its event section is cut into checksummed chunks (`frame.rs`). The writer writes the header with
//! `events = u64::MAX` first and seeks back to fill in the counts on `finish`, so an
//! unfinished file is recognised as such.
//!
//! Each event starts with one varint `tag = zigzag(id - previous id) << 2 | kind`, the previous
//! id being that of the event before (0 before the first): kind 0 = alloc with default
//! alignment (then `size`), 1 = free, 2 = realloc (then `size`), 3 = alloc with an explicit
//! alignment (then `size`, `align`). Ids as deltas because consecutive events mostly touch
//! nearby ids (fresh ids count up, recent objects die first): on the committed traces this
//! takes the tag from ~3 bytes to ~1.5, and the file to under 2 bytes per event.

use super::flow::Fields;
use super::{Event, ObjectId};

pub(crate) const MAGIC: [u8; 8] = *b"FSIMTRC\0";
/// Events only (format v1 in the docs: no threads, times or sites).
pub(crate) const VERSION: u32 = 2;
/// Events in their context (format v2: threads, times, call sites; see `codec.rs`).
pub(crate) const VERSION_CONTEXT: u32 = 3;
pub(crate) const HEADER_LEN: usize = 88;
/// Version 3's header: version 2's, then flags, threads, thread exits, sites, duration.
pub(crate) const HEADER_LEN_CONTEXT: usize = 128;
/// Either kind of events, checksummed (`frame.rs`): the only version written.
pub(crate) const VERSION_CHECKSUMS: u32 = 4;
/// Version 3's header and its CRC-32.
pub(crate) const HEADER_LEN_CHECKSUMS: usize = 132;
/// The longest possible event: a 6-byte tag (35 bits) and two 10-byte varints.
pub(crate) const MAX_EVENT_LEN: usize = 26;
pub(crate) const UNFINISHED: u64 = u64::MAX;

const KIND_ALLOC: u64 = 0;
const KIND_FREE: u64 = 1;
const KIND_REALLOC: u64 = 2;
const KIND_ALLOC_ALIGNED: u64 = 3;

/// The counts a trace file carries in front of its events, known once it is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TraceHeader {
    pub version: u32,
    pub events: u64,
    pub allocs: u64,
    pub frees: u64,
    pub reallocs: u64,
    /// The most objects live at once.
    pub peak_live_objects: u64,
    /// One more than the highest id used: a table indexed by id needs this many slots. Equal
    /// to `peak_live_objects` when ids were assigned lowest-free-first (every import and
    /// recording does that); hand-written text traces may leave gaps.
    pub id_limit: u64,
    /// The most bytes requested (sum of live sizes) at once.
    pub peak_requested_bytes: u64,
    /// Bytes still requested after the last event.
    pub final_requested_bytes: u64,
    /// Length of the event section in bytes.
    pub payload_bytes: u64,
    /// Which context the events carry (none: a version 2 file).
    pub fields: Fields,
    /// Threads (1 without threads).
    pub threads: u64,
    pub thread_exits: u64,
    /// Call sites in the site table.
    pub sites: u64,
    /// The time of the last record in ns (0 without times).
    pub duration_ns: u64,
}

/// Why a header did not decode.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HeaderError {
    Version(u32),
    /// A header length or flag that no version has: the header is damaged.
    Corrupt(String),
}

impl TraceHeader {
    /// The length of the header [`TraceHeader::encode`] writes (without a recording's block).
    pub(crate) fn encoded_len(&self) -> usize {
        HEADER_LEN_CHECKSUMS
    }

    /// The fixed part's length in this header's version (a recording's block follows it).
    pub(crate) fn fixed_len(&self) -> usize {
        match self.version {
            VERSION => HEADER_LEN,
            _ => HEADER_LEN_CONTEXT,
        }
    }

    /// The bytes at the header's end that are its checksum (version 4: 4).
    pub(crate) fn checksum_len(&self) -> usize {
        if self.version == VERSION_CHECKSUMS {
            4
        } else {
            0
        }
    }

    /// The header of version 4 (whatever `self.version` says: no other is written) with
    /// `block` (a recording's, `meta.rs`) after its fixed part:
    /// the length field covers the block, and the CRC-32 at the end covers everything before.
    pub(crate) fn encode_with(&self, block: &[u8]) -> Vec<u8> {
        let len = self.encoded_len() + block.len();
        let version = VERSION_CHECKSUMS;
        let mut out = vec![0u8; len];
        out[..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&version.to_le_bytes());
        out[12..16].copy_from_slice(&(len as u32).to_le_bytes());
        let counts = [
            self.events,
            self.allocs,
            self.frees,
            self.reallocs,
            self.peak_live_objects,
            self.id_limit,
            self.peak_requested_bytes,
            self.final_requested_bytes,
            self.payload_bytes,
        ];
        for (i, c) in counts.iter().enumerate() {
            out[16 + 8 * i..24 + 8 * i].copy_from_slice(&c.to_le_bytes());
        }
        {
            let context = [
                self.fields.bits(),
                self.threads,
                self.thread_exits,
                self.sites,
                self.duration_ns,
            ];
            for (i, c) in context.iter().enumerate() {
                out[88 + 8 * i..96 + 8 * i].copy_from_slice(&c.to_le_bytes());
            }
        }
        out[HEADER_LEN_CONTEXT..len - 4].copy_from_slice(block);
        let sum = super::frame::crc(&out[..len - 4]);
        out[len - 4..].copy_from_slice(&sum.to_le_bytes());
        out
    }

    /// Version 4: whether the header's bytes (all of it, a recording's block included) match
    /// their checksum, the last 4 bytes.
    pub(crate) fn checksum_holds(bytes: &[u8]) -> bool {
        let n = bytes.len();
        n < HEADER_LEN_CHECKSUMS
            || u32::from_le_bytes(bytes[n - 4..].try_into().unwrap())
                == super::frame::crc(&bytes[..n - 4])
    }

    /// The version and header length of the first 16 bytes, checked: the length the rest of
    /// the header has.
    pub(crate) fn decode_len(bytes: &[u8; 16]) -> Result<usize, HeaderError> {
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        let len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let expected = match version {
            VERSION => HEADER_LEN,
            VERSION_CONTEXT => HEADER_LEN_CONTEXT,
            VERSION_CHECKSUMS => HEADER_LEN_CHECKSUMS,
            v if [HEADER_LEN, HEADER_LEN_CONTEXT, HEADER_LEN_CHECKSUMS].contains(&len) => {
                return Err(HeaderError::Version(v))
            }
            v => {
                return Err(HeaderError::Corrupt(format!(
                    "the header is corrupt (version {v}, header length {len})"
                )))
            }
        };
        // Longer: a recording's block follows the fixed part (`meta.rs`).
        let with_meta = len > expected && len - expected <= super::meta::MAX_META_LEN;
        if len != expected && !with_meta {
            return Err(HeaderError::Corrupt(format!(
                "the header is corrupt (version {version} has a {expected}-byte header, this one says {len})"
            )));
        }
        Ok(len)
    }

    /// Decodes a whole header (of the length [`TraceHeader::decode_len`] gave) after the
    /// magic was checked.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, HeaderError> {
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        let version = u32_at(8);
        let (fields, threads, thread_exits, sites, duration_ns) = if version != VERSION {
            // Version 3 always has context; version 4 may have none (then its events are
            // version 2's).
            let fields = Fields::from_bits(u64_at(88))
                .filter(|f| f.any() || version == VERSION_CHECKSUMS)
                .ok_or_else(|| {
                    HeaderError::Corrupt(format!(
                        "the header is corrupt (context flags {:#x})",
                        u64_at(88)
                    ))
                })?;
            (fields, u64_at(96), u64_at(104), u64_at(112), u64_at(120))
        } else {
            (Fields::NONE, 1, 0, 0, 0)
        };
        Ok(TraceHeader {
            fields,
            threads,
            thread_exits,
            sites,
            duration_ns,
            version,
            events: u64_at(16),
            allocs: u64_at(24),
            frees: u64_at(32),
            reallocs: u64_at(40),
            peak_live_objects: u64_at(48),
            id_limit: u64_at(56),
            peak_requested_bytes: u64_at(64),
            final_requested_bytes: u64_at(72),
            payload_bytes: u64_at(80),
        })
    }
}

#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    // One capacity check per varint, not one `push` (and its check) per byte: the writer
    // encodes 3-4 varints per call, and the pushes were a tenth of a recording's conversion.
    out.reserve(10);
    let len = out.len();
    let spare = &mut out.spare_capacity_mut()[..10];
    let mut n = 0;
    while v >= 0x80 {
        spare[n].write((v as u8) | 0x80);
        v >>= 7;
        n += 1;
    }
    spare[n].write(v as u8);
    // SAFETY: the first n + 1 bytes of the spare capacity were just written.
    unsafe { out.set_len(len + n + 1) };
}

/// The tag of an event about `id` after one about `prev`.
#[inline(always)]
fn tag(id: ObjectId, prev: ObjectId, kind: u64) -> u64 {
    let delta = id as i64 - prev as i64;
    let zigzag = ((delta << 1) ^ (delta >> 63)) as u64;
    zigzag << 2 | kind
}

/// Appends one event's bytes; `prev` is the id of the event before, updated.
#[inline]
pub(crate) fn encode_event(out: &mut Vec<u8>, event: &Event, prev: &mut ObjectId) {
    let id = event.id();
    match *event {
        Event::Alloc { size, align: 0, .. } => {
            put_varint(out, tag(id, *prev, KIND_ALLOC));
            put_varint(out, size);
        }
        Event::Alloc { size, align, .. } => {
            put_varint(out, tag(id, *prev, KIND_ALLOC_ALIGNED));
            put_varint(out, size);
            put_varint(out, align);
        }
        Event::Free { .. } => put_varint(out, tag(id, *prev, KIND_FREE)),
        Event::Realloc { size, .. } => {
            put_varint(out, tag(id, *prev, KIND_REALLOC));
            put_varint(out, size);
        }
    }
    *prev = id;
}

/// Why bytes did not decode to an event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The bytes end inside the event.
    Short,
    /// A varint longer than 10 bytes, overflowing 64 bits, or an id outside `0..=u32::MAX`.
    Malformed(&'static str),
}

#[inline(always)]
pub(crate) fn get_varint(buf: &[u8], pos: &mut usize) -> Result<u64, DecodeError> {
    // One and two bytes are most sizes and tags. The position is passed by value below, so
    // that a caller's loop keeps it in a register.
    let p = *pos;
    if let Some(&b0) = buf.get(p) {
        if b0 < 0x80 {
            *pos = p + 1;
            return Ok(b0 as u64);
        }
        if let Some(&b1) = buf.get(p + 1) {
            if b1 < 0x80 {
                *pos = p + 2;
                return Ok((b0 & 0x7f) as u64 | (b1 as u64) << 7);
            }
        }
    }
    let (value, end) = get_varint_long(buf, p)?;
    *pos = end;
    Ok(value)
}

/// A varint of any length at `pos`: its value and the position after it.
#[inline(never)]
fn get_varint_long(buf: &[u8], mut pos: usize) -> Result<(u64, usize), DecodeError> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let Some(&byte) = buf.get(pos) else {
            return Err(DecodeError::Short);
        };
        pos += 1;
        if shift == 63 && byte > 1 {
            return Err(DecodeError::Malformed("varint overflows 64 bits"));
        }
        value |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return Ok((value, pos));
        }
        shift += 7;
        if shift > 63 {
            return Err(DecodeError::Malformed("varint longer than 10 bytes"));
        }
    }
}

/// Decodes one event from the front of `buf`, `prev` being the id of the event before;
/// returns it and its length.
#[inline(always)]
pub(crate) fn decode_event(buf: &[u8], prev: ObjectId) -> Result<(Event, usize), DecodeError> {
    let mut pos = 0;
    let tag = get_varint(buf, &mut pos)?;
    let zigzag = tag >> 2;
    let delta = (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
    let Ok(id) = ObjectId::try_from(prev as i64 + delta) else {
        return Err(DecodeError::Malformed("object id outside 0..=2^32-1"));
    };
    let event = event_fields(tag & 3, id, buf, &mut pos)?;
    Ok((event, pos))
}

/// The fields after a call's tag: `kind` 0 alloc, 1 free, 2 realloc, 3 aligned alloc (shared by
/// file versions 2 and 3).
#[inline(always)]
pub(crate) fn event_fields(
    kind: u64,
    id: ObjectId,
    buf: &[u8],
    pos: &mut usize,
) -> Result<Event, DecodeError> {
    Ok(match kind {
        KIND_ALLOC => Event::Alloc {
            id,
            size: get_varint(buf, pos)?,
            align: 0,
        },
        KIND_FREE => Event::Free { id },
        KIND_REALLOC => Event::Realloc {
            id,
            size: get_varint(buf, pos)?,
        },
        _ => {
            let size = get_varint(buf, pos)?;
            let align = get_varint(buf, pos)?;
            if align == 0 {
                // The writer never emits this: kind 0 says "default alignment".
                return Err(DecodeError::Malformed("explicit alignment of 0"));
            }
            Event::Alloc { id, size, align }
        }
    })
}
