//! The event file a measuring child replays (written by the parent, mapped by the child)
//! and the child's anonymous mappings for its own tables.

use super::MeasureError;
use crate::live::relay::Step;
use crate::trace::{Event, Record};
use std::path::Path;

/// The event file the parent writes: a 16-byte header (entries, object ids), then 16 bytes
/// per entry: size (u64), id (u32), kind (u8: 0 alloc, 1 free, 2 realloc, 3 the thread
/// exits), log2 alignment (u8; 0 for none), thread (u16). Little-endian (the file never
/// leaves the machine). Samples count calls, not thread exits.
pub(crate) const HEADER_BYTES: usize = 16;
pub(crate) const EVENT_BYTES: usize = 16;
pub(super) const ALLOC: u8 = 0;
pub(super) const FREE: u8 = 1;
pub(super) const REALLOC: u8 = 2;
const EXIT: u8 = 3;

/// The event file's header: `entries` (calls and thread exits) and the object ids (the
/// highest id + 1).
pub(crate) fn encode_header(entries: u64, ids: u64) -> [u8; HEADER_BYTES] {
    let mut out = [0u8; HEADER_BYTES];
    out[..8].copy_from_slice(&entries.to_le_bytes());
    out[8..].copy_from_slice(&ids.to_le_bytes());
    out
}

/// One record's entry in the child's event format (`None`: a site, which has none).
pub(crate) fn encode_entry(r: &Record) -> Result<Option<[u8; EVENT_BYTES]>, MeasureError> {
    let (thread, kind, id, size, align) = match *r {
        // A mallctl write is jemalloc's own: the other allocators have nothing to do.
        Record::Site { .. } | Record::Mapping { .. } | Record::Control { .. } => return Ok(None),
        Record::ThreadExit { thread, .. } => (thread, EXIT, 0, 0, 0),
        Record::Call(ref c) => match c.event {
            Event::Alloc { id, size, align } => (c.thread, ALLOC, id, size, align),
            Event::Free { id } => (c.thread, FREE, id, 0, 0),
            Event::Realloc { id, size } => (c.thread, REALLOC, id, size, 0),
        },
    };
    let thread = u16::try_from(thread).map_err(|_| {
        MeasureError::child_input(&format!(
            "thread {thread}: the measuring replay runs at most 65,536 threads"
        ))
    })?;
    let lg_align = if align > 1 {
        align.trailing_zeros() as u8
    } else {
        0
    };
    let mut out = [0u8; EVENT_BYTES];
    out[..8].copy_from_slice(&size.to_le_bytes());
    out[8..12].copy_from_slice(&id.to_le_bytes());
    out[12] = kind;
    out[13] = lg_align;
    out[14..].copy_from_slice(&thread.to_le_bytes());
    Ok(Some(out))
}

/// An anonymous mapping of `len` bytes, every page written once (so it is resident).
pub(super) struct Mapping {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
}

impl Mapping {
    pub(super) fn anonymous(len: usize) -> Result<Mapping, MeasureError> {
        let len = len.max(1);
        // SAFETY: a fresh private anonymous mapping; unmapped on drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(MeasureError::io(
                "mmap of the replay tables",
                std::io::Error::last_os_error(),
            ));
        }
        // Written, not just mapped: a page counts as resident once touched.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, len) };
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    pub(super) fn file(path: &Path) -> Result<Mapping, MeasureError> {
        use std::os::unix::io::AsRawFd;
        let file = std::fs::File::open(path).map_err(|e| MeasureError::io("the event file", e))?;
        let len = file
            .metadata()
            .map_err(|e| MeasureError::io("the event file", e))?
            .len() as usize;
        if len < HEADER_BYTES {
            return Err(MeasureError::child_input(
                "the event file is shorter than its header",
            ));
        }
        // SAFETY: read-only private mapping of a file we keep open until mapped. Its pages are
        // file-backed, so they never count as anonymous memory.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(MeasureError::io(
                "mmap of the event file",
                std::io::Error::last_os_error(),
            ));
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    /// Entry `i` of an event file: (size, id, kind, log2 alignment, thread).
    pub(super) fn event(&self, i: usize) -> (usize, usize, u8, u8, usize) {
        let at = HEADER_BYTES + i * EVENT_BYTES;
        let word = self.u64_at(at + 8);
        (
            self.u64_at(at) as usize,
            (word & 0xffff_ffff) as usize,
            (word >> 32) as u8,
            (word >> 40) as u8,
            (word >> 48) as usize,
        )
    }

    pub(super) fn step(&self, i: usize) -> Step {
        let (_, _, kind, _, thread) = self.event(i);
        Step {
            thread,
            exit: kind == EXIT,
        }
    }

    pub(super) fn u64_at(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        // SAFETY: callers stay inside the mapping (checked against its length).
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), b.as_mut_ptr(), 8) };
        u64::from_le_bytes(b)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
