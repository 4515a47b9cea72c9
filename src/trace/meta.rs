//! What a recording says about itself, carried in the header after its fixed part (the
//! header's length field covers it; a header of exactly its version's length has none, as
//! every trace written before): the recorded program's command line and how the recording
//! ended.
//!
//! Layout (little-endian): `ending u64` (0: whole; 1: truncated, the process was killed
//! before the recorder could finish; `0x100 | N`: truncated, the process died of signal N;
//! `1 << 32 | N`: the process ran to its end, but replaced itself N times with an exec the
//! recorder did not see, losing the calls it had not written yet),
//! `argc u32`, then per argument `len u32` and its UTF-8 bytes; then, in recordings made since
//! the recorder reads the program's allocator, the tag `ALOC` and a slot of
//! [`ALLOCATOR_SLOT`] bytes (`len u32`, then that many bytes of UTF-8 `key value` lines:
//! the program's jemalloc as it ran, see [`TraceMeta::allocator`]; the slot is reserved when
//! the trace is created and filled when it is finished); zeros up to a multiple of 8.

/// Bytes reserved for the recorded allocator's lines (its length word included).
pub(crate) const ALLOCATOR_SLOT: usize = 1024;
const ALLOCATOR_TAG: &[u8; 4] = b"ALOC";

/// The longest block a reader accepts (a longer one is taken for a damaged header).
pub(crate) const MAX_META_LEN: usize = 1 << 20;

/// How the recorded process ended, as far as its trace goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum Ending {
    /// The trace holds every call (the process exited, or nothing says otherwise).
    #[default]
    Whole,
    /// Truncated: the process was killed before the recorder could write its last calls.
    Killed,
    /// Truncated: the process died of this signal.
    Signal(u32),
    /// The process ran to its end, but this many times it replaced itself with an exec the
    /// recorder did not see (a direct system call): the calls it had not written then are
    /// missing.
    UnseenExecs(u32),
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Whole => write!(f, "whole"),
            Ending::Killed => write!(f, "truncated (killed)"),
            Ending::Signal(n) => write!(f, "truncated (signal {n})"),
            Ending::UnseenExecs(n) => write!(f, "misses calls ({n} unseen exec(s))"),
        }
    }
}

/// The recorded program and how its recording ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TraceMeta {
    /// The program and its arguments (not valid UTF-8: converted lossily).
    pub command: Vec<String>,
    pub ending: Ending,
    /// The recorded program's jemalloc as it ran, read through its `mallctl`: `key value`
    /// lines (`version`, `arenas.quantum`, `arenas.page`, `opt.*`, `background_thread`).
    /// `Some("")` reserves the slot (a recording, until it is finished); an empty slot reads
    /// back as `None` (the program had no jemalloc, or its recording did not end normally).
    pub allocator: Option<String>,
}

impl TraceMeta {
    /// The command line as one line, each argument quoted as a shell would need it.
    pub(crate) fn command_line(&self) -> String {
        let quote = |a: &String| {
            let plain = !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:=@%".contains(&b));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        };
        self.command.iter().map(quote).collect::<Vec<_>>().join(" ")
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let ending: u64 = match self.ending {
            Ending::Whole => 0,
            Ending::Killed => 1,
            Ending::Signal(n) => 0x100 | u64::from(n & 0xff),
            Ending::UnseenExecs(n) => 1 << 32 | u64::from(n),
        };
        let mut out = ending.to_le_bytes().to_vec();
        // Bounded so the block stays under what a reader accepts.
        let mut args: Vec<&String> = Vec::new();
        let mut room = MAX_META_LEN - 32;
        for a in &self.command {
            if a.len() + 4 > room {
                break;
            }
            room -= a.len() + 4;
            args.push(a);
        }
        out.extend_from_slice(&(args.len() as u32).to_le_bytes());
        for a in args {
            out.extend_from_slice(&(a.len() as u32).to_le_bytes());
            out.extend_from_slice(a.as_bytes());
        }
        if let Some(text) = &self.allocator {
            // Whole lines that fit the slot.
            let mut len = 0;
            for line in text.split_inclusive('\n') {
                if len + line.len() > ALLOCATOR_SLOT - 4 {
                    break;
                }
                len += line.len();
            }
            out.extend_from_slice(ALLOCATOR_TAG);
            out.extend_from_slice(&(len as u32).to_le_bytes());
            let start = out.len();
            out.extend_from_slice(&text.as_bytes()[..len]);
            out.resize(start + ALLOCATOR_SLOT - 4, 0);
        }
        out.resize(out.len().div_ceil(8) * 8, 0);
        out
    }

    /// Decodes a block; `None` if it is damaged.
    pub(crate) fn decode(bytes: &[u8]) -> Option<TraceMeta> {
        let u32_at = |at: usize| -> Option<usize> {
            Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize)
        };
        let ending = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
        let ending = match ending {
            0 => Ending::Whole,
            1 => Ending::Killed,
            n if n >> 8 == 1 => Ending::Signal((n & 0xff) as u32),
            n if n >> 32 == 1 => Ending::UnseenExecs(n as u32),
            _ => return None,
        };
        let argc = u32_at(8)?;
        let mut at = 12;
        let mut command = Vec::new();
        for _ in 0..argc {
            let len = u32_at(at)?;
            let arg = bytes.get(at + 4..at + 4 + len)?;
            command.push(String::from_utf8(arg.to_vec()).ok()?);
            at += 4 + len;
        }
        let mut allocator = None;
        if bytes.get(at..at + 4) == Some(&ALLOCATOR_TAG[..]) {
            let len = u32_at(at + 4)?;
            if len > ALLOCATOR_SLOT - 4 {
                return None;
            }
            let text = bytes.get(at + 8..at + 8 + len)?;
            allocator = Some(String::from_utf8(text.to_vec()).ok()?).filter(|t| !t.is_empty());
            at += 4 + ALLOCATOR_SLOT;
        }
        bytes
            .get(at..)
            .unwrap_or(&[])
            .iter()
            .all(|&b| b == 0)
            .then_some(TraceMeta {
                command,
                ending,
                allocator,
            })
    }
}

/// The header's bytes with the block, if there is one, after the fixed part (the header's
/// length and checksum then cover it).
pub(crate) fn encode_header(header: &super::TraceHeader, meta: Option<&TraceMeta>) -> Vec<u8> {
    header.encode_with(&meta.map(TraceMeta::encode).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ending and an argument with a quote and a space come back as they went.
    #[test]
    fn blocks_decode_to_what_was_encoded() {
        for ending in [
            Ending::Whole,
            Ending::Killed,
            Ending::Signal(2),
            Ending::UnseenExecs(3),
        ] {
            for allocator in [None, Some("version 5.3.0-0-g54eaed1d\narenas.quantum 16\n")] {
                let meta = TraceMeta {
                    command: vec!["sh".into(), "-c".into(), "ls 'x y'".into(), String::new()],
                    ending,
                    allocator: allocator.map(String::from),
                };
                let block = meta.encode();
                assert_eq!(block.len() % 8, 0);
                assert_eq!(TraceMeta::decode(&block), Some(meta));
            }
        }
        // A reserved slot left empty, and one whose lines overflow it (whole lines kept).
        let reserved = TraceMeta {
            allocator: Some(String::new()),
            ..TraceMeta::default()
        };
        let block = reserved.encode();
        let back = TraceMeta::decode(&block).unwrap();
        assert_eq!(back.allocator, None);
        let long = "opt.x 1\n".repeat(200);
        let full = TraceMeta {
            allocator: Some(long),
            ..TraceMeta::default()
        };
        assert_eq!(
            full.encode().len(),
            block.len(),
            "the slot keeps the block's length"
        );
        let back = TraceMeta::decode(&full.encode())
            .unwrap()
            .allocator
            .unwrap();
        assert_eq!(back.len(), 1016 / 8 * 8);
        assert!(back.ends_with('\n'));
        assert_eq!(
            TraceMeta::decode(&[9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            None
        );
    }
}
