//! Indexing a raw file's chunks: headers only, events are decoded later by the cursors.

use super::{
    u32_at, u64_at, words, Chunk, RawEnd, RawImage, RawThread, CHUNK_HEADER, FLAGS_KNOWN,
    K_ALLOCATOR, K_END, K_EVENTS, K_EXEC, K_HEADER, K_MAPS, K_SIGNAL, MAGIC, RAW_VERSION,
};
use crate::trace::TraceError;
use std::fs::File;
use std::os::unix::fs::FileExt;

fn corrupt(file: &str, offset: usize, what: impl Into<String>) -> TraceError {
    TraceError::Corrupt {
        file: file.to_string(),
        offset: offset as u64,
        what: what.into(),
    }
}

/// The image an image-header chunk starts (its clock pair `pair`), or why the payload is not
/// a header this reader knows (another version, or a flag it does not know: a recorder
/// library from another build, whose events it could misread).
fn image_from_header(payload: &[u8], pair: (u64, u64)) -> Result<RawImage, String> {
    let w: Vec<u64> = words(payload).collect();
    if w.len() < 6 {
        return Err(format!("image header of {} words, 6 expected", w.len()));
    }
    if w[0] != RAW_VERSION {
        return Err(format!(
            "image header version {}, this fragsim reads version {RAW_VERSION} (the recorder \
             library and fragsim must come from the same build)",
            w[0]
        ));
    }
    if w[4] & !FLAGS_KNOWN != 0 {
        return Err(format!(
            "image header flags {:#x}: {:#x} unknown to this fragsim",
            w[4],
            w[4] & !FLAGS_KNOWN
        ));
    }
    Ok(RawImage {
        clock_min: pair,
        clock_max: pair,
        pid: w[1],
        ppid: w[2],
        start_ns: w[3],
        flags: w[4],
        fork_seq: w[5],
        ..RawImage::default()
    })
}

/// An `END` chunk's counts (missing words are 0).
fn end_of(payload: &[u8]) -> RawEnd {
    let w: Vec<u64> = words(payload).collect();
    RawEnd {
        dropped_threads: w.first().copied().unwrap_or(0),
        late_calls: w.get(1).copied().unwrap_or(0),
        lost_bytes: w.get(2).copied().unwrap_or(0),
    }
}

/// Indexes the complete chunks of `file` (`size` bytes) from offset `at` on into `images`;
/// returns the offset after the last complete one.
pub(super) fn index_chunks(
    file: &File,
    size: usize,
    mut at: usize,
    images: &mut Vec<RawImage>,
    name: &str,
) -> Result<usize, TraceError> {
    let io = |e| TraceError::Io {
        file: name.to_string(),
        source: e,
    };
    let mut header = [0u8; CHUNK_HEADER];
    let mut payload = Vec::new();
    while at + CHUNK_HEADER <= size {
        file.read_exact_at(&mut header, at as u64).map_err(io)?;
        let h = &header;
        if u32_at(h, 0) != MAGIC {
            return Err(corrupt(name, at, "no chunk magic"));
        }
        let kind = u32_at(h, 4);
        let slot = u32_at(h, 8);
        let tid = u32_at(h, 12);
        let len = u64_at(h, 16);
        let pair = (u64_at(h, 24), u64_at(h, 32));
        let start = at + CHUNK_HEADER;
        let Some(end) = usize::try_from(len).ok().and_then(|l| start.checked_add(l)) else {
            return Err(corrupt(name, at, "chunk length out of range"));
        };
        if end > size {
            break;
        }
        if kind != K_EVENTS {
            payload.resize(end - start, 0);
            file.read_exact_at(&mut payload, start as u64).map_err(io)?;
        }
        if kind == K_HEADER {
            let image =
                image_from_header(&payload, pair).map_err(|what| corrupt(name, at, what))?;
            images.push(image);
        } else {
            let Some(image) = images.last_mut() else {
                return Err(corrupt(name, at, "chunk before the first image header"));
            };
            image.saw_clock(pair);
            match kind {
                K_EVENTS => {
                    if !len.is_multiple_of(8) {
                        return Err(corrupt(name, start, "events not in whole words"));
                    }
                    image.mark = image.mark.max(u64_at(h, 40));
                    let thread = image.threads.entry(tid).or_insert_with(|| RawThread {
                        slot,
                        chunks: Vec::new(),
                    });
                    thread.chunks.push(Chunk {
                        start,
                        end,
                        maps: image.maps.len(),
                    });
                }
                K_MAPS => image
                    .maps
                    .push(String::from_utf8_lossy(&payload).into_owned()),
                K_EXEC => image.exec_tid = Some(tid),
                K_END => image.end = Some(end_of(&payload)),
                K_SIGNAL => image.signal = words(&payload).next(),
                K_ALLOCATOR => {
                    image.allocator = Some(String::from_utf8_lossy(&payload).into_owned())
                }
                other => return Err(corrupt(name, at, format!("unknown chunk kind {other}"))),
            }
        }
        at = end;
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::super::{
        parse, CHUNK_HEADER, E_ALLOC, FLAG_TSC_ORDER, K_EVENTS, K_HEADER, MAGIC, RAW_VERSION,
        SAME_STAMP,
    };
    use crate::trace::{Record, TraceError};

    /// A chunk of `kind` for thread 1 (the layout of `preload/src/lib.rs`, by hand) with
    /// `payload`, appended to `bytes`.
    fn chunk(bytes: &mut Vec<u8>, kind: u32, payload: &[u64]) {
        for w in [MAGIC, kind, 0, 1] {
            bytes.extend(w.to_le_bytes());
        }
        for w in [8 * payload.len() as u64, 0, 0, 0] {
            bytes.extend(w.to_le_bytes());
        }
        for w in payload {
            bytes.extend(w.to_le_bytes());
        }
    }

    fn write(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("raw.7");
        std::fs::write(&path, bytes).expect("write");
        (dir, path)
    }

    /// A raw file of one image header chunk with `version` and `flags`.
    fn header_file(version: u64, flags: u64) -> (tempfile::TempDir, std::path::PathBuf) {
        let mut bytes = Vec::new();
        chunk(&mut bytes, K_HEADER, &[version, 7, 1, 0, flags, 0]);
        assert_eq!(bytes.len(), CHUNK_HEADER + 48);
        write(&bytes)
    }

    #[test]
    fn a_corrupt_event_past_the_first_decoded_batch_is_named_by_its_offset() {
        // 1,000 allocs (more than a cursor decodes at a time), then a word of kind 9.
        let mut events = vec![E_ALLOC, 5, 16, 0x1000];
        for i in 1..1000u64 {
            events.extend([E_ALLOC | SAME_STAMP | i << 8, 16, 0x1000 + 16 * i]);
        }
        events.push(0x1f | 1000 << 8);
        let mut bytes = Vec::new();
        chunk(&mut bytes, K_HEADER, &[RAW_VERSION, 7, 1, 0, 0, 0]);
        chunk(&mut bytes, K_EVENTS, &events);
        let bad_at = bytes.len() - 8;
        let (_dir, path) = write(&bytes);
        let process = parse(&path).expect("indexed");
        let mut calls = 0;
        let mut sink = |batch: &mut Vec<Record>| {
            calls += batch
                .iter()
                .filter(|r| matches!(r, Record::Call(_)))
                .count();
            Ok(())
        };
        match crate::record::convert(&process, "raw.7", &mut sink) {
            Err(TraceError::Corrupt { offset, what, .. }) => {
                assert_eq!(offset, bad_at as u64);
                assert_eq!(what, "unknown event kind 31");
            }
            other => panic!("expected the corrupt event, got {other:?}"),
        }
        assert!(calls <= 1000, "{calls} calls handed on");
    }

    fn refusal(version: u64, flags: u64) -> Option<String> {
        let (_dir, path) = header_file(version, flags);
        match parse(&path) {
            Ok(p) => {
                assert_eq!(p.images.len(), 1);
                assert_eq!(p.images[0].flags, flags);
                None
            }
            Err(TraceError::Corrupt { offset, what, .. }) => {
                assert_eq!(offset, 0);
                Some(what)
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }

    #[test]
    fn a_header_of_this_version_with_known_flags_is_read() {
        assert_eq!(refusal(RAW_VERSION, FLAG_TSC_ORDER), None);
    }

    #[test]
    fn another_version_is_refused_with_both_versions_named() {
        // Version 2 files could carry TSC keys under flag 16 unannounced.
        let what = refusal(2, FLAG_TSC_ORDER).expect("refused");
        assert!(
            what.contains("version 2") && what.contains("version 3"),
            "{what}"
        );
    }

    #[test]
    fn an_unknown_flag_is_refused_by_its_bit() {
        let what = refusal(RAW_VERSION, FLAG_TSC_ORDER | 64).expect("refused");
        assert!(what.contains("0x40 unknown"), "{what}");
    }
}
