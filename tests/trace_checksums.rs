//! Traces that cannot be silently wrong (issue 39 §6): every single-bit flip of a trace file is
//! an error naming the damaged chunk's offset (or the header's), never a different trace read
//! without a word; traces of the versions without checksums are refused with the command that
//! upgrades them, and that command keeps every record.

mod common;

use common::{fragsim, sealed};
use fragsim::trace::{self, Record};
use std::path::Path;

/// xorshift64*: a seeded, reproducible choice of offsets.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
    }
}

fn read(path: &Path) -> Result<Vec<Record>, trace::TraceError> {
    trace::open(path)?.records().collect()
}

/// The offset an error about a flip at `offset` must name: 0 (magic, or the header's
/// checksum), 8 (version and length), or the head of the chunk holding the byte, all found
/// from the layout `frame.rs` documents (`sealed::chunks`), not from the reader.
fn expected_offset(good: &[u8], offset: usize) -> usize {
    match offset {
        0..=7 | 16..=131 => 0,
        8..=15 => 8,
        _ => {
            sealed::chunks(good)
                .into_iter()
                .find(|&(at, len)| (at..at + 8 + len).contains(&offset))
                .expect("every byte past the header is in a chunk")
                .0
        }
    }
}

/// Flips each bit of each byte at `offsets` in a copy of `name` and reads it whole; every
/// flip must be an error of one line naming the expected offset.
fn every_flip_is_caught(name: &str, offsets: &[usize]) -> usize {
    let good = std::fs::read(name).unwrap();
    read(Path::new(name)).expect("the committed trace reads");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flipped.trace");
    let mut flips = 0;
    for &offset in offsets {
        for bit in 0..8 {
            let mut copy = good.clone();
            copy[offset] ^= 1 << bit;
            std::fs::write(&path, &copy).unwrap();
            let err = match read(&path) {
                Ok(records) => panic!(
                    "{name}: bit {bit} of byte {offset} flipped reads as {} records without an error",
                    records.len()
                ),
                Err(e) => e.to_string(),
            };
            let at = format!("at byte {}", expected_offset(&good, offset));
            // The header's length (bytes 12..16) may name a longer header with a recording's
            // block: then the header's checksum, which covers the length, fails (byte 0), or
            // the file ends inside the header it names.
            let at_length = (12..16).contains(&offset) && err.contains("header");
            assert!(
                (err.contains(&at) || at_length) && !err.contains('\n'),
                "{name}: bit {bit} of byte {offset}: {err} (wanted '{at}')"
            );
            flips += 1;
        }
    }
    flips
}

#[test]
fn every_bit_of_a_small_trace_flipped_is_caught() {
    // sort.trace: 1,330 bytes (header, one chunk), every bit of every byte.
    let len = std::fs::metadata("data/traces/sort.trace").unwrap().len() as usize;
    let flips = every_flip_is_caught("data/traces/sort.trace", &(0..len).collect::<Vec<_>>());
    assert_eq!(flips, len * 8);
}

#[test]
fn every_bit_at_200_random_offsets_of_a_threaded_trace_is_caught() {
    // c-thread-pool.trace: threads, times and sites; the offsets seeded, the header's bytes
    // and the first chunk's head among them.
    let name = "data/traces/c-thread-pool.trace";
    let len = std::fs::metadata(name).unwrap().len() as usize;
    let mut rng = Rng(0x39_0006);
    let mut offsets: Vec<usize> = (0..200).map(|_| rng.below(len)).collect();
    offsets.extend([
        0,
        8,
        12,
        16,
        100,
        128,
        131,
        132,
        135,
        136,
        139,
        140,
        len - 1,
    ]);
    assert_eq!(every_flip_is_caught(name, &offsets), offsets.len() * 8);
}

#[test]
fn twenty_random_flips_exit_2_with_one_line_naming_the_offset() {
    // The experiment, through the command line: 20 single-bit flips at seeded random
    // offsets of a committed trace, each read by `trace stats`.
    let name = "data/traces/python-dict.trace";
    let good = std::fs::read(name).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flipped.trace");
    let mut rng = Rng(20);
    for _ in 0..20 {
        let (offset, bit) = (rng.below(good.len()), rng.below(8));
        let mut copy = good.clone();
        copy[offset] ^= 1 << bit;
        std::fs::write(&path, &copy).unwrap();
        let out = fragsim()
            .args(["trace", "stats"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let at = format!("at byte {}", expected_offset(&good, offset));
        assert_eq!(
            out.status.code(),
            Some(2),
            "bit {bit} of byte {offset}: {stderr}"
        );
        assert!(
            stderr.trim_end().lines().count() == 1 && stderr.contains(&at),
            "bit {bit} of byte {offset}: {stderr} (wanted '{at}')"
        );
        assert!(out.stdout.is_empty(), "no summary of a damaged trace");
    }
}

#[test]
fn old_versions_are_refused_with_the_command_that_upgrades_them() {
    // tests/legacy: the committed traces as they were before version 4 (sort.trace, version
    // 2: calls only; decay/idle.trace, version 3: threads and times).
    for (old, version) in [
        ("tests/legacy/sort-v2.trace", 2),
        ("tests/legacy/idle-v3.trace", 3),
    ] {
        let out = fragsim().args(["trace", "stats", old]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.trim_end().lines().count() == 1
                && stderr.contains(&format!("trace version {version} has no checksums"))
                && stderr.contains(&format!("fragsim trace upgrade {old} -o NEW.trace")),
            "{stderr}"
        );
    }
}

#[test]
fn upgrade_keeps_every_record() {
    // The upgraded legacy files hold the records of the committed (version 4) ones, which
    // were upgraded from the same files; and text dumps of the old files (made by fragsim
    // before version 4, kept beside them) match the upgraded ones.
    let dir = tempfile::tempdir().unwrap();
    for (old, committed) in [
        ("tests/legacy/sort-v2.trace", "data/traces/sort.trace"),
        ("tests/legacy/idle-v3.trace", "data/traces/decay/idle.trace"),
    ] {
        let new = dir.path().join("new.trace");
        let out = fragsim()
            .args(["trace", "upgrade", old, "-o"])
            .arg(&new)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("to version 4"), "{stderr}");
        assert_eq!(read(&new).unwrap(), read(Path::new(committed)).unwrap());
        let dump = fragsim()
            .args(["trace", "dump"])
            .arg(&new)
            .output()
            .unwrap();
        let text = old.replace(".trace", ".txt");
        assert_eq!(
            String::from_utf8(dump.stdout).unwrap(),
            std::fs::read_to_string(&text).unwrap(),
            "{text}"
        );
        // A version 4 trace upgraded again is the same file.
        let again = dir.path().join("again.trace");
        let out = fragsim()
            .args(["trace", "upgrade"])
            .arg(&new)
            .arg("-o")
            .arg(&again)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&new).unwrap());
    }
}
