//! The header of a binary trace, read and checked before any record.

use super::super::format::{HeaderError, TraceHeader, MAGIC, UNFINISHED, VERSION_CHECKSUMS};
use super::super::frame::read_full;
use super::super::{TraceError, TraceMeta};
use std::io::Read;

/// Reads and checks the header; returns it, its length and a recording's block if it has one. An empty input, one cut inside the
/// header, one with another magic and a damaged header are four different errors.
pub(super) fn read_header(
    inner: &mut impl Read,
    name: &str,
) -> Result<(TraceHeader, usize, Option<TraceMeta>), TraceError> {
    let file = || name.to_string();
    let mut raw = [0u8; 16];
    let got = read_full(inner, &mut raw).map_err(|e| TraceError::io(name, e))?;
    if got == 0 {
        return Err(TraceError::Input {
            file: file(),
            what: "empty file (not a fragsim trace)".into(),
        });
    }
    let magic_part = got.min(MAGIC.len());
    if raw[..magic_part] != MAGIC[..magic_part] {
        return Err(TraceError::BadMagic {
            file: file(),
            found: raw[..magic_part].to_vec(),
        });
    }
    let truncated = |got: usize, len: usize| TraceError::Truncated {
        file: file(),
        offset: got as u64,
        what: format!("the file ends inside its {len}-byte header"),
    };
    if got < raw.len() {
        return Err(truncated(got, super::super::format::HEADER_LEN));
    }
    let len = TraceHeader::decode_len(&raw).map_err(|e| match e {
        HeaderError::Version(version) => TraceError::UnsupportedVersion {
            file: file(),
            version,
            supported: VERSION_CHECKSUMS,
        },
        HeaderError::Corrupt(what) => TraceError::Corrupt {
            file: file(),
            offset: 8,
            what,
        },
    })?;
    let mut bytes = vec![0u8; len];
    bytes[..16].copy_from_slice(&raw);
    let got = 16 + read_full(inner, &mut bytes[16..]).map_err(|e| TraceError::io(name, e))?;
    if got < len {
        return Err(truncated(got, len));
    }
    if !TraceHeader::checksum_holds(&bytes) {
        return Err(TraceError::Corrupt {
            file: file(),
            offset: 0,
            what: format!("the {len}-byte header fails its checksum (the file is damaged)"),
        });
    }
    let header = TraceHeader::decode(&bytes).map_err(|e| TraceError::Corrupt {
        file: file(),
        offset: 88,
        what: match e {
            HeaderError::Corrupt(what) => what,
            HeaderError::Version(v) => format!("version {v}"),
        },
    })?;
    if header.events == UNFINISHED {
        return Err(TraceError::Unfinished { file: file() });
    }
    let fixed = header.fixed_len();
    let block = &bytes[fixed..len - header.checksum_len()];
    let meta = (!block.is_empty()).then(|| TraceMeta::decode(block));
    let damaged = TraceError::Corrupt {
        file: file(),
        offset: fixed as u64,
        what: "the header is corrupt (its recording block does not decode)".into(),
    };
    Ok((header, len, meta.map(|m| m.ok_or(damaged)).transpose()?))
}
