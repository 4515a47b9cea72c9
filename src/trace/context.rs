//! Trace format v2: each call in its context — the thread that made it, when, and from where.
//!
//! A v2 stream is a sequence of [`Record`]s. Threads are dense `u32`s numbered in order of first
//! appearance (the main thread is 0) and never reused after their [`Record::ThreadExit`]; times
//! are nanoseconds since the trace's start, non-decreasing; call sites are indices into a table
//! of call stacks whose entries ([`Record::Site`]) come before their first use. Object ids stay
//! global: an object allocated on one thread may be freed on another.
//!
//! The text form spells these as lines (other tools write them too):
//! ```text
//! t TID                       the following events run on thread TID (until the next t line; default 0)
//! T NS                        the following events happen at NS ns since the start (non-decreasing)
//! s SITE FRAME;FRAME;...      call site SITE: frames innermost first, each `module+0xOFFSET` or a symbol
//! a ID SIZE [ALIGN] [@SITE]   allocation (r ID SIZE [@SITE] likewise)
//! x                           the current thread exits
//! ```

use super::Event;
use std::fmt;

/// A trace thread: dense, in order of first appearance, 0 = the process's main thread.
pub type ThreadId = u32;

/// An index into a trace's table of call stacks.
pub type SiteId = u32;

/// One frame of a call stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Frame {
    /// An address not (yet) symbolized: the module (file name or path) and the offset in it.
    Location { module: String, offset: u64 },
    /// A symbol name (with `+0x..` or a source location if the writer wanted one).
    Symbol(String),
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frame::Location { module, offset } => write!(f, "{module}+{offset:#x}"),
            Frame::Symbol(name) => f.write_str(name),
        }
    }
}

impl Frame {
    /// Parses the text form's frame: `module+0xOFFSET` is a location, anything else a symbol.
    /// Frames may not contain `;` (the separator) or line breaks.
    pub fn parse(text: &str) -> Frame {
        if let Some((module, hex)) = text.rsplit_once("+0x") {
            if !module.is_empty() && !hex.is_empty() {
                if let Ok(offset) = u64::from_str_radix(hex, 16) {
                    // Only the canonical spelling is a location, so text -> binary -> text is
                    // the identity (`+0x0A` stays a symbol).
                    if format!("{offset:x}") == hex {
                        return Frame::Location {
                            module: module.to_string(),
                            offset,
                        };
                    }
                }
            }
        }
        Frame::Symbol(text.to_string())
    }
}

/// One allocator call with its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Call {
    pub event: Event,
    pub thread: ThreadId,
    /// Nanoseconds since the trace's start, if the trace has times.
    pub time_ns: Option<u64>,
    /// The call site, if the trace has one for this call (allocations and reallocs only).
    pub site: Option<SiteId>,
    /// Made while another allocator call of the same thread was in progress (glibc's
    /// `pthread_create` inside jemalloc's `mallctl("background_thread")`): jemalloc serves it
    /// reentrantly, from arena 0 without the thread cache.
    pub reentrant: bool,
    /// Made through jemalloc's own API (`mallocx`, `rallocx`, `xallocx`, `dallocx`,
    /// `sdallocx`) with these `MALLOCX_` flags: its `MALLOCX_TCACHE` bits (8-19) and
    /// `MALLOCX_ARENA` bits (20-31) only (0: none, as for `malloc`); see
    /// [`Call::explicit_arena`] and [`Call::tcache_off`].
    pub mallocx_flags: u32,
}

impl Call {
    /// A call on the main thread without time or site (what a v1 trace holds).
    pub fn plain(event: Event) -> Call {
        Call {
            event,
            thread: 0,
            time_ns: None,
            site: None,
            reentrant: false,
            mallocx_flags: 0,
        }
    }

    /// `MALLOCX_ARENA(a)`: the arena the call names.
    pub fn explicit_arena(&self) -> Option<u32> {
        match self.mallocx_flags >> 20 {
            0 => None,
            a => Some(a - 1),
        }
    }

    /// `MALLOCX_TCACHE_NONE`: the call bypasses the thread cache. (`MALLOCX_TCACHE(t)`, an
    /// explicit cache made with `tcache.create`, is taken for the thread's own.)
    pub fn tcache_off(&self) -> bool {
        (self.mallocx_flags >> 8) & 0xfff == 1
    }
}

/// One item of a v2 stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    Call(Call),
    /// The thread exits (its thread cache is flushed and freed); it makes no further calls.
    ThreadExit {
        thread: ThreadId,
        time_ns: Option<u64>,
    },
    /// The call stack of a site, innermost frame first; comes before the site's first use.
    Site {
        id: SiteId,
        frames: Vec<Frame>,
    },
    /// A mapping the program's allocator made (a recording's `mmap` inside an allocator call,
    /// trimmed as the allocator trimmed it): `[addr, addr + len)`. Not a call: where the
    /// allocator's memory lies, which decides its radix tree's leaves (`fragsim::process`).
    Mapping {
        addr: u64,
        len: u64,
    },
}

/// The call stacks of a trace, indexed by [`SiteId`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteTable {
    sites: Vec<Vec<Frame>>,
}

impl SiteTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next site; `Err` when `id` is not the next one (the table stays dense).
    pub fn push(&mut self, id: SiteId, frames: Vec<Frame>) -> Result<(), String> {
        if id as usize != self.sites.len() {
            return Err(format!(
                "site {id} defined out of order (the next site is {})",
                self.sites.len()
            ));
        }
        self.sites.push(frames);
        Ok(())
    }

    pub fn get(&self, id: SiteId) -> Option<&[Frame]> {
        self.sites.get(id as usize).map(Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.sites.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }

    /// A site's frames joined innermost first by `;` (the blame and folded-stack spelling).
    pub fn joined(&self, id: SiteId) -> Option<String> {
        self.get(id).map(|frames| {
            frames
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(";")
        })
    }
}
