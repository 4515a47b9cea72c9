//! The one way in: [`open`] detects what a trace file is and yields its records.

use super::format::MAGIC;
use super::{
    read_text_records, Batch, Event, Record, TraceError, TraceHeader, TraceMeta, TraceReader,
};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// The records of an opened trace.
pub type RecordStream = Box<dyn Iterator<Item = Result<Record, TraceError>> + Send>;
/// The calls of an opened trace, without their context.
pub type EventStream = Box<dyn Iterator<Item = Result<Event, TraceError>> + Send>;

/// What a trace file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TraceKind {
    /// The binary form (file version 4, checksummed: calls only, or with threads, times, sites).
    Binary,
    /// The text form.
    Text,
}

/// A trace file, opened and recognised.
pub struct OpenedTrace {
    pub name: String,
    pub kind: TraceKind,
    /// The binary form's header (its counts), `None` for text.
    pub header: Option<TraceHeader>,
    /// A recording's command line and ending (`record` writes it), if the file has them.
    pub meta: Option<TraceMeta>,
    source: Source,
}

/// Where the records come from: the binary reader is kept as it is until the caller says
/// whether it wants records or calls only, so [`OpenedTrace::events`] reads the calls straight
/// off the reader's fast path (no `Record` built and taken apart per call).
enum Source {
    Binary(Box<TraceReader<BufReader<File>>>),
    Records(RecordStream),
}

impl OpenedTrace {
    /// The calls, in order, with their thread, time and site; thread exits; sites.
    pub fn records(self) -> RecordStream {
        match self.source {
            Source::Binary(reader) => Box::new((*reader).records()),
            Source::Records(records) => records,
        }
    }

    /// The calls only (what a one-thread model replays).
    pub fn events(self) -> EventStream {
        match self.source {
            // The reader's own iterator yields the calls and skips the other records, with
            // the same checks and errors as its records.
            Source::Binary(reader) => reader,
            Source::Records(records) => Box::new(records.filter_map(|r| match r {
                Ok(Record::Call(call)) => Some(Ok(call.event)),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })),
        }
    }

    /// The calls and thread exits a batch at a time (what the engine reads): the binary form
    /// is decoded straight into the batch, the text form's records are moved into it.
    pub fn batches(self) -> Batches {
        Batches {
            source: self.source,
        }
    }

    /// The number of calls when the file says it up front (the binary form).
    pub fn events_hint(&self) -> Option<u64> {
        self.header.map(|h| h.events)
    }
}

/// An opened trace read a batch at a time ([`OpenedTrace::batches`]).
pub struct Batches {
    source: Source,
}

impl Batches {
    /// Clears `batch` and fills it with the next records (calls and thread exits), up to
    /// `max`; an empty batch and `Ok` at the end. On an error the batch keeps the records
    /// before it, and the trace ends there.
    pub fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<(), TraceError> {
        match &mut self.source {
            Source::Binary(reader) => reader.fill_batch(batch, max),
            Source::Records(records) => batch.fill_from(records, max),
        }
    }
}

impl std::fmt::Debug for OpenedTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedTrace")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// Whether `path` is a binary fragsim trace (by its magic; finished or not): a file a new
/// trace may replace without losing anything of the user's.
pub fn is_binary_trace(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; MAGIC.len()];
    File::open(path).is_ok_and(|mut f| f.read_exact(&mut head).is_ok()) && head == MAGIC
}

/// Opens a trace file: the binary form (by its magic), or the text form; a valgrind log or
/// anything else is refused with the reason, naming the file.
pub fn open(path: &Path) -> Result<OpenedTrace, TraceError> {
    let name = path.display().to_string();
    let io = |e| TraceError::io(&name, e);
    if path.is_dir() {
        return Err(TraceError::Input {
            file: name,
            what: "is a directory, not a trace".into(),
        });
    }
    let mut file = BufReader::with_capacity(1 << 16, File::open(path).map_err(io)?);
    let head = file.fill_buf().map_err(io)?;
    if head.is_empty() {
        return Err(TraceError::Input {
            file: name,
            what: "empty file (not a trace)".into(),
        });
    }
    if head.starts_with(&MAGIC[..head.len().min(MAGIC.len())]) || damaged_magic(head) {
        let reader = TraceReader::named(file, &name)?;
        let header = *reader.header();
        let meta = reader.meta().cloned();
        return Ok(OpenedTrace {
            name,
            kind: TraceKind::Binary,
            header: Some(header),
            meta,
            source: Source::Binary(Box::new(reader)),
        });
    }
    match sniff_text(head) {
        Sniff::Text => Ok(OpenedTrace {
            source: Source::Records(Box::new(read_text_records(file, &name))),
            name,
            kind: TraceKind::Text,
            header: None,
            meta: None,
        }),
        Sniff::Valgrind => Err(TraceError::Input {
            file: name.clone(),
            what: format!(
                "a valgrind log, not a trace: convert it first with `fragsim trace import --from valgrind {name} -o TRACE`"
            ),
        }),
        Sniff::Other(why) => Err(TraceError::Input {
            file: name,
            what: format!(
                "not a trace: neither fragsim's binary form (magic FSIMTRC), its text form, nor a valgrind log ({why})"
            ),
        }),
    }
}

/// Six of the magic's eight bytes: a binary trace with a damaged magic, refused as such by
/// the binary reader rather than as a text file that does not parse.
fn damaged_magic(head: &[u8]) -> bool {
    head.len() >= MAGIC.len() && head.iter().zip(MAGIC).filter(|(a, b)| *a == b).count() >= 6
}

enum Sniff {
    Text,
    Valgrind,
    Other(String),
}

/// Looks at the first lines of a file that is not binary.
fn sniff_text(head: &[u8]) -> Sniff {
    // The buffer may end inside a UTF-8 character: judge the valid prefix.
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.valid_up_to() > 0 && e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return Sniff::Other("it is not UTF-8 text".into()),
    };
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("==") || line.starts_with("--") {
            return Sniff::Valgrind;
        }
        let content = line.split('#').next().unwrap_or("").trim();
        let Some(first) = content.split_whitespace().next() else {
            continue;
        };
        return match first {
            "a" | "f" | "r" | "t" | "T" | "s" | "x" | "e" | "j" | "m" | "c" => Sniff::Text,
            other => Sniff::Other(format!(
                "its first line starts with '{}'",
                other.chars().take(20).collect::<String>()
            )),
        };
    }
    // Only blank lines and comments so far: an (empty) text trace.
    Sniff::Text
}

/// Opens a binary trace of any version, with checksums (4) or without (2 and 3): what
/// `trace upgrade` reads; [`open`] refuses the versions without checksums.
pub fn open_for_upgrade(path: &Path) -> Result<OpenedTrace, TraceError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| TraceError::io(&name, e))?;
    let reader = TraceReader::named_any_version(BufReader::with_capacity(1 << 16, file), &name)?;
    Ok(OpenedTrace {
        header: Some(*reader.header()),
        meta: reader.meta().cloned(),
        name,
        kind: TraceKind::Binary,
        source: Source::Binary(Box::new(reader)),
    })
}

/// Reads the whole trace at `path` into memory (tests and small tools).
pub fn read_all(path: &Path) -> Result<Vec<Record>, TraceError> {
    open(path)?.records().collect()
}
