//! File version 4's checksums: a CRC-32 over the header, and the event section cut into
//! chunks, each `length u32, crc u32, bytes` (little-endian), the CRC taken over the length's
//! four bytes and the chunk's bytes. A damaged byte anywhere is then an error naming the chunk
//! (or the header), never a different trace read without a word: varints and the object rules
//! alone let some single-bit flips through (a size one bit larger, a realloc for an alloc).
//!
//! The chunks are the writer's buffer flushes (64 KiB, the last one shorter). The events run
//! on across chunk boundaries: the reader takes the verified bytes as one stream
//! ([`Deframer`]) and decodes them as before, so its tight loops see no framing.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};

/// A chunk's length and checksum.
pub(crate) const CHUNK_HEAD: usize = 8;
/// The longest chunk a reader accepts: the writer's (64 KiB and at most one record more, a
/// site definition of at most 128 KiB) with room to spare; a longer length is damage.
pub(crate) const MAX_CHUNK: usize = 1 << 20;

/// The CRC-32 (IEEE) of `bytes`.
pub fn crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

fn chunk_crc(len: u32, bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len.to_le_bytes());
    h.update(bytes);
    h.finalize()
}

/// Writes `bytes` as one chunk; returns the bytes written (nothing for an empty `bytes`).
pub(crate) fn write_chunk(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<u64> {
    if bytes.is_empty() {
        return Ok(0);
    }
    let len = u32::try_from(bytes.len()).expect("chunks are a buffer flush long");
    let mut head = [0u8; CHUNK_HEAD];
    head[..4].copy_from_slice(&len.to_le_bytes());
    head[4..].copy_from_slice(&chunk_crc(len, bytes).to_le_bytes());
    out.write_all(&head)?;
    out.write_all(bytes)?;
    Ok((CHUNK_HEAD + bytes.len()) as u64)
}

/// Why the framed bytes could not be read. Offsets are the chunk's, in the file.
#[derive(Debug)]
pub(crate) enum FrameError {
    Io(std::io::Error),
    /// The chunk's bytes do not match its checksum.
    Checksum {
        chunk: u64,
    },
    /// A length of 0 or above [`MAX_CHUNK`]: the length itself is damaged.
    Length {
        chunk: u64,
        len: u64,
    },
    /// The file ends inside the chunk.
    Cut {
        chunk: u64,
    },
}

impl FrameError {
    /// The offset the error is at and its one-line reason.
    pub fn describe(&self) -> (u64, String) {
        match self {
            FrameError::Io(e) => (0, e.to_string()),
            FrameError::Checksum { chunk } => (
                *chunk,
                format!("the chunk at byte {chunk} fails its checksum (the file is damaged)"),
            ),
            FrameError::Length { chunk, len } => (
                *chunk,
                format!(
                    "the chunk at byte {chunk} says it is {len} bytes long (the file is damaged)"
                ),
            ),
            FrameError::Cut { chunk } => (
                *chunk,
                format!("the file ends inside the chunk at byte {chunk}"),
            ),
        }
    }
}

/// Chunk starts kept to translate an offset in the event stream into one in the file: the
/// reader's buffer (256 KiB) spans a few chunks of at least 64 KiB, so a few suffice.
const KEPT_CHUNKS: usize = 16;

/// The event section as one stream of verified bytes: with `framed`, each chunk is read
/// whole and checked before any of its bytes is given out; without, the bytes pass through
/// (file versions 2 and 3, read only to upgrade them).
pub(crate) struct Deframer {
    framed: bool,
    chunk: Vec<u8>,
    pos: usize,
    /// File offset of the next chunk's head.
    next_chunk: u64,
    /// Stream offset (from the section's start) at the end of the verified bytes.
    stream_end: u64,
    /// (stream offset, file offset) of the first byte of recent chunks.
    starts: VecDeque<(u64, u64)>,
    section_start: u64,
}

impl Deframer {
    /// The event section starting at file offset `section_start`.
    pub fn new(framed: bool, section_start: u64) -> Self {
        Deframer {
            framed,
            chunk: Vec::new(),
            pos: 0,
            next_chunk: section_start,
            stream_end: 0,
            starts: VecDeque::with_capacity(KEPT_CHUNKS),
            section_start,
        }
    }

    /// The file offset of the byte at `stream` bytes into the event section.
    pub(crate) fn file_offset(&self, stream: u64) -> u64 {
        if !self.framed {
            return self.section_start + stream;
        }
        match self.starts.iter().rev().find(|(s, _)| *s <= stream) {
            Some(&(s, file)) => file + (stream - s),
            None => self.section_start + stream,
        }
    }

    /// Fills `out` from the verified bytes; 0 at the end of the input.
    pub fn read(&mut self, inner: &mut impl Read, out: &mut [u8]) -> Result<usize, FrameError> {
        if !self.framed {
            return read_retrying(inner, out).map_err(FrameError::Io);
        }
        if self.pos == self.chunk.len() && !self.next(inner)? {
            return Ok(0);
        }
        let n = out.len().min(self.chunk.len() - self.pos);
        out[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }

    /// Reads and checks the next chunk; `false` at the end of the input.
    fn next(&mut self, inner: &mut impl Read) -> Result<bool, FrameError> {
        let at = self.next_chunk;
        let mut head = [0u8; CHUNK_HEAD];
        match read_full(inner, &mut head).map_err(FrameError::Io)? {
            0 => return Ok(false),
            CHUNK_HEAD => {}
            _ => return Err(FrameError::Cut { chunk: at }),
        }
        let len = u32::from_le_bytes(head[..4].try_into().unwrap());
        let sum = u32::from_le_bytes(head[4..].try_into().unwrap());
        if len == 0 || len as usize > MAX_CHUNK {
            return Err(FrameError::Length {
                chunk: at,
                len: len as u64,
            });
        }
        self.chunk.resize(len as usize, 0);
        if read_full(inner, &mut self.chunk).map_err(FrameError::Io)? < len as usize {
            return Err(FrameError::Cut { chunk: at });
        }
        if chunk_crc(len, &self.chunk) != sum {
            return Err(FrameError::Checksum { chunk: at });
        }
        if self.starts.len() == KEPT_CHUNKS {
            self.starts.pop_front();
        }
        self.starts
            .push_back((self.stream_end, at + CHUNK_HEAD as u64));
        self.stream_end += len as u64;
        self.next_chunk = at + (CHUNK_HEAD + len as usize) as u64;
        self.pos = 0;
        Ok(true)
    }
}

fn read_retrying(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match read_retrying(r, &mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}
