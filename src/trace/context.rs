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

/// Parts of the path of the system's C and C++ runtime and loader (libc, libstdc++, the
/// loader, libpthread, libm): the runtime's frames, which shortened stacks leave out.
const SYSTEM_MODULES: [&str; 5] = [
    "/libc.so",
    "/libstdc++.so",
    "/ld-linux",
    "/libpthread",
    "/libm.so",
];

/// Whether the module at `path` is the system's runtime (libc, libstdc++, the loader,
/// libpthread, libm).
pub fn is_system_module(path: &str) -> bool {
    SYSTEM_MODULES.iter().any(|m| path.contains(m))
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

    /// `MALLOCX_TCACHE_NONE`: the call bypasses the thread cache.
    pub fn tcache_off(&self) -> bool {
        (self.mallocx_flags >> 8) & 0xfff == 1
    }

    /// `MALLOCX_TCACHE(c)`: the call goes through explicit cache `c` (made with
    /// `tcache.create`, see [`Control::CacheCreate`]) instead of the thread's own.
    pub(crate) fn explicit_cache(&self) -> Option<u32> {
        match (self.mallocx_flags >> 8) & 0xfff {
            0 | 1 => None,
            c => Some(c - 2),
        }
    }
}

/// `MALLCTL_ARENAS_ALL`: `arena.<i>.purge` and `arena.<i>.decay` on every arena.
pub const ALL_ARENAS: u32 = 4096;

/// A `mallctl` write that changes what the allocator holds or how it serves a thread's later
/// calls, made by the thread of the record (recorded where a program calls jemalloc's API).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Control {
    /// `thread.tcache.flush`: the thread's cache returns every object it holds.
    FlushCache,
    /// `arena.<i>.purge`: arena `i` purges all its dirty and muzzy pages ([`ALL_ARENAS`]:
    /// every arena).
    Purge { arena: u32 },
    /// `arena.<i>.decay`: arena `i` purges what its decay allows by now.
    Decay { arena: u32 },
    /// `thread.arena` written: the thread moves to arena `arena` (its cache with it).
    BindArena { arena: u32 },
    /// `thread.tcache.enabled` written: the thread's cache made (`true`) or flushed and
    /// destroyed (`false`).
    CacheEnabled { on: bool },
    /// `tcache.create` gave explicit cache `cache` (its block from arena 0, associated with
    /// the thread's internal arena).
    CacheCreate { cache: u32 },
    /// `tcache.flush` of explicit cache `cache`: destroyed now, made again at its next use.
    CacheFlush { cache: u32 },
    /// `tcache.destroy` of explicit cache `cache`: destroyed, its index free for reuse.
    CacheDestroy { cache: u32 },
    /// `background_thread` written: jemalloc's background purging threads started or stopped.
    BackgroundThreads { on: bool },
}

impl Control {
    /// The code and argument the binary form and the recorder write.
    pub fn code(self) -> (u64, u64) {
        match self {
            Control::FlushCache => (0, 0),
            Control::Purge { arena } => (1, arena.into()),
            Control::Decay { arena } => (2, arena.into()),
            Control::BindArena { arena } => (3, arena.into()),
            Control::CacheEnabled { on } => (4, on.into()),
            Control::CacheCreate { cache } => (5, cache.into()),
            Control::CacheFlush { cache } => (6, cache.into()),
            Control::CacheDestroy { cache } => (7, cache.into()),
            Control::BackgroundThreads { on } => (8, on.into()),
        }
    }

    /// The control of `code` and `arg` (`None`: not one of [`Control::code`]'s).
    pub(crate) fn from_code(code: u64, arg: u64) -> Option<Control> {
        let arena = u32::try_from(arg).ok();
        Some(match code {
            0 if arg == 0 => Control::FlushCache,
            1 => Control::Purge { arena: arena? },
            2 => Control::Decay { arena: arena? },
            3 => Control::BindArena { arena: arena? },
            4 if arg <= 1 => Control::CacheEnabled { on: arg == 1 },
            5 => Control::CacheCreate { cache: arena? },
            6 => Control::CacheFlush { cache: arena? },
            7 => Control::CacheDestroy { cache: arena? },
            8 if arg <= 1 => Control::BackgroundThreads { on: arg == 1 },
            _ => return None,
        })
    }

    /// The text form's words after `c`: `flush`, `purge I`, `decay I`, `arena I` (`all` for
    /// [`ALL_ARENAS`]), `tcache on|off`, `cache create|flush|destroy C`, `background on|off`.
    pub fn words(self) -> String {
        let arena = |a: u32| match a {
            ALL_ARENAS => "all".to_string(),
            a => a.to_string(),
        };
        match self {
            Control::FlushCache => "flush".into(),
            Control::Purge { arena: a } => format!("purge {}", arena(a)),
            Control::Decay { arena: a } => format!("decay {}", arena(a)),
            Control::BindArena { arena: a } => format!("arena {a}"),
            Control::CacheEnabled { on: true } => "tcache on".into(),
            Control::CacheEnabled { on: false } => "tcache off".into(),
            Control::CacheCreate { cache } => format!("cache create {cache}"),
            Control::CacheFlush { cache } => format!("cache flush {cache}"),
            Control::CacheDestroy { cache } => format!("cache destroy {cache}"),
            Control::BackgroundThreads { on: true } => "background on".into(),
            Control::BackgroundThreads { on: false } => "background off".into(),
        }
    }

    /// Parses [`Control::words`].
    pub fn parse(words: &[&str]) -> Result<Control, String> {
        let arena = |w: &str| match w {
            "all" => Ok(ALL_ARENAS),
            w => w
                .parse::<u32>()
                .map_err(|_| format!("arena '{w}' is not a number or 'all'")),
        };
        match words {
            ["flush"] => Ok(Control::FlushCache),
            ["purge", a] => Ok(Control::Purge { arena: arena(a)? }),
            ["decay", a] => Ok(Control::Decay { arena: arena(a)? }),
            ["arena", a] => match arena(a)? {
                ALL_ARENAS => Err("'c arena' takes one arena, not 'all'".into()),
                a => Ok(Control::BindArena { arena: a }),
            },
            ["tcache", "on"] => Ok(Control::CacheEnabled { on: true }),
            ["tcache", "off"] => Ok(Control::CacheEnabled { on: false }),
            ["cache", op, c] => {
                let cache = c
                    .parse::<u32>()
                    .map_err(|_| format!("cache '{c}' is not a number"))?;
                match *op {
                    "create" => Ok(Control::CacheCreate { cache }),
                    "flush" => Ok(Control::CacheFlush { cache }),
                    "destroy" => Ok(Control::CacheDestroy { cache }),
                    _ => Err(format!("'c cache {op}' is not 'create', 'flush' or 'destroy'")),
                }
            }
            ["background", "on"] => Ok(Control::BackgroundThreads { on: true }),
            ["background", "off"] => Ok(Control::BackgroundThreads { on: false }),
            _ => Err(format!(
                "control '{}' is not 'flush', 'purge I', 'decay I', 'arena I', 'tcache on|off', 'cache create|flush|destroy C' or 'background on|off'",
                words.join(" ")
            )),
        }
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
    /// The thread made a `mallctl` write that changes the allocator's state ([`Control`]).
    Control {
        thread: ThreadId,
        time_ns: Option<u64>,
        control: Control,
    },
}

impl Record {
    /// Events as the records of a v1 trace (plain calls on the main thread): a generated
    /// or hand-written event list as a [`crate::analysis::TraceSource`] takes it.
    pub fn plain_calls(events: &[Event]) -> Vec<Record> {
        events
            .iter()
            .map(|&e| Record::Call(Call::plain(e)))
            .collect()
    }

    /// The record's time stamp, if it is one that has times (calls, exits, controls).
    pub fn time_ns(&self) -> Option<u64> {
        match self {
            Record::Call(c) => c.time_ns,
            Record::ThreadExit { time_ns, .. } | Record::Control { time_ns, .. } => *time_ns,
            Record::Site { .. } | Record::Mapping { .. } => None,
        }
    }

    /// The record's time stamp to change, if it is one that has times.
    pub fn time_ns_mut(&mut self) -> Option<&mut Option<u64>> {
        match self {
            Record::Call(c) => Some(&mut c.time_ns),
            Record::ThreadExit { time_ns, .. } | Record::Control { time_ns, .. } => Some(time_ns),
            Record::Site { .. } | Record::Mapping { .. } => None,
        }
    }

    /// The thread of a record a thread makes (calls, exits, controls).
    pub fn thread(&self) -> Option<ThreadId> {
        match self {
            Record::Call(c) => Some(c.thread),
            Record::ThreadExit { thread, .. } | Record::Control { thread, .. } => Some(*thread),
            Record::Site { .. } | Record::Mapping { .. } => None,
        }
    }
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
