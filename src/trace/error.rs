//! Everything that can go wrong reading, writing or importing a trace. Each error names the
//! file (or stream) and, where it has one, the byte offset, line or event number.

use std::path::PathBuf;

/// A trace error; its `Display` is one line.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("'{file}': {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("'{file}': not a fragsim trace (bad magic {found:02x?} at byte 0)")]
    BadMagic { file: String, found: Vec<u8> },
    #[error(
        "'{file}': unsupported trace version {version} at byte 8 (this build reads version {supported}, and upgrades 2 and 3)"
    )]
    UnsupportedVersion {
        file: String,
        version: u32,
        supported: u32,
    },
    /// A trace of a version without checksums (2 or 3): read only by `trace upgrade`.
    #[error(
        "'{file}': trace version {version} has no checksums; upgrade it with `fragsim trace upgrade {file} -o NEW.trace`"
    )]
    OldVersion { file: String, version: u32 },
    #[error("'{file}': unfinished trace (its writer never wrote the final header)")]
    Unfinished { file: String },
    #[error("'{file}': truncated at byte {offset}: {what}")]
    Truncated {
        file: String,
        offset: u64,
        what: String,
    },
    #[error("'{file}': corrupt at byte {offset}: {what}")]
    Corrupt {
        file: String,
        offset: u64,
        what: String,
    },
    /// An event that contradicts the events before it (free of a dead id, ...).
    #[error("'{file}': event {event}: {what}")]
    Inconsistent {
        file: String,
        event: u64,
        what: String,
    },
    /// A bad line in a text trace or a valgrind log.
    #[error("'{file}' line {line}: {what}")]
    Line {
        file: String,
        line: u64,
        what: String,
    },
    #[error("'{file}': {what}")]
    Input { file: String, what: String },
    #[error("cannot write '{}': {source}", path.display())]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl TraceError {
    pub(crate) fn io(file: &str, source: std::io::Error) -> Self {
        TraceError::Io {
            file: file.to_string(),
            source,
        }
    }
}
