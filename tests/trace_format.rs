//! The binary and text forms: round trips over random consistent traces (proptest), counts
//! checked against hand-computed values, and every kind of bad file.

mod common;

use common::sealed;
use fragsim::trace::{
    read_text, write_text, Event, IdPool, TraceError, TraceHeader, TraceReader, TraceWriter,
};
use proptest::prelude::*;
use std::io::Cursor;

/// Builds a consistent trace from random operations: ids lowest-free-first, like an import.
fn trace_from_ops(ops: &[(u8, u64, u8)]) -> Vec<Event> {
    let mut pool = IdPool::new();
    let mut live: Vec<u32> = Vec::new();
    let mut events = Vec::new();
    for &(kind, size, pick) in ops {
        match kind % 4 {
            0 | 1 => {
                let id = pool.take().unwrap();
                live.push(id);
                let align = if kind % 8 == 5 {
                    1u64 << (pick % 13)
                } else {
                    0
                };
                events.push(Event::Alloc { id, size, align });
            }
            2 if !live.is_empty() => {
                let id = live.swap_remove(pick as usize % live.len());
                pool.give_back(id);
                events.push(Event::Free { id });
            }
            3 if !live.is_empty() => {
                let id = live[pick as usize % live.len()];
                events.push(Event::Realloc { id, size });
            }
            _ => {}
        }
    }
    events
}

fn to_binary(events: &[Event]) -> (TraceHeader, Vec<u8>) {
    let mut w = TraceWriter::new(Cursor::new(Vec::new())).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    let (header, out) = w.finish_into_inner().unwrap();
    (header, out.into_inner())
}

fn read_binary(bytes: &[u8]) -> Result<Vec<Event>, TraceError> {
    TraceReader::new(bytes)?.collect()
}

fn to_text(events: &[Event]) -> String {
    let mut out = Vec::new();
    write_text(&mut out, events.iter().copied().map(Ok)).unwrap();
    String::from_utf8(out).unwrap()
}

fn size_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..64,
        0u64..70_000,
        0u64..(1 << 40),
        Just((1u64 << 63) - 1)
    ]
}

proptest! {
    #[test]
    fn binary_round_trip_is_identity(ops in proptest::collection::vec((any::<u8>(), size_strategy(), any::<u8>()), 0..400)) {
        let events = trace_from_ops(&ops);
        let (header, bytes) = to_binary(&events);
        prop_assert_eq!(header.events, events.len() as u64);
        prop_assert_eq!(&read_binary(&bytes).unwrap(), &events);
    }

    #[test]
    fn text_binary_text_is_identity(ops in proptest::collection::vec((any::<u8>(), size_strategy(), any::<u8>()), 0..400)) {
        let events = trace_from_ops(&ops);
        let text = to_text(&events);
        let parsed: Vec<Event> = read_text(text.as_bytes()).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(&parsed, &events);
        let (_, bytes) = to_binary(&parsed);
        let back = to_text(&read_binary(&bytes).unwrap());
        prop_assert_eq!(back, text);
    }

    #[test]
    fn every_truncation_is_an_error(ops in proptest::collection::vec((any::<u8>(), size_strategy(), any::<u8>()), 1..60), cut in any::<prop::sample::Index>()) {
        let events = trace_from_ops(&ops);
        let (_, bytes) = to_binary(&events);
        let cut = cut.index(bytes.len());
        prop_assert!(read_binary(&bytes[..cut]).is_err());
    }
}

#[test]
fn header_counts_match_hand_computed_values() {
    // a0 100, a1 50, r0 300, f1, a1 8 align 64, f0 -> peak live 2, requested 100, 150, 350
    // (realloc), 300 (free of 50), 308, 8.
    let text = "# hand-written\na 0 100\na 1 50\nr 0 300\nf 1\na 1 8 64   # aligned\nf 0\n";
    let events: Vec<Event> = read_text(text.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    let (h, bytes) = to_binary(&events);
    assert_eq!(
        (h.events, h.allocs, h.frees, h.reallocs),
        (6, 3, 2, 1),
        "{h:?}"
    );
    assert_eq!((h.peak_live_objects, h.id_limit), (2, 2));
    assert_eq!((h.peak_requested_bytes, h.final_requested_bytes), (350, 8));
    // Tags (id deltas 0, +1, -1, +1, 0, -1: one byte each) and varints: a0 100 = 2 bytes,
    // a1 50 = 2, r0 300 = 1 + 2, f1 = 1, a1 8 64 = 3, f0 = 1.
    assert_eq!(h.payload_bytes, 12);
    // Version 4: a 132-byte header, then one chunk (its length and checksum, 8 bytes).
    assert_eq!(bytes.len(), 132 + 8 + 12);
    assert_eq!(TraceReader::new(&bytes[..]).unwrap().header(), &h);
}

#[test]
fn file_writer_is_atomic_and_reader_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.trace");
    let mut w = TraceWriter::create(&path).unwrap();
    w.write(&Event::Alloc {
        id: 0,
        size: 24,
        align: 0,
    })
    .unwrap();
    assert!(!path.exists(), "nothing at the target before finish");
    drop(w);
    assert!(!path.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "temp file removed"
    );
    let mut w = TraceWriter::create(&path).unwrap();
    w.write(&Event::Alloc {
        id: 0,
        size: 24,
        align: 0,
    })
    .unwrap();
    w.write(&Event::Free { id: 0 }).unwrap();
    let h = w.finish().unwrap();
    let r = TraceReader::open(&path).unwrap();
    assert_eq!(r.header(), &h);
    assert_eq!(r.count(), 2);
}

fn error_text(result: Result<Vec<Event>, TraceError>) -> String {
    result.unwrap_err().to_string()
}

#[test]
fn corrupt_files_are_one_line_errors_with_offsets() {
    let events = trace_from_ops(&[(0, 10, 0), (0, 20, 0), (2, 0, 0), (3, 500, 0)]);
    let (_, good) = to_binary(&events);
    assert!(read_binary(&good).is_ok());

    let mut bad = good.clone();
    bad[0] = b'X';
    assert!(error_text(read_binary(&bad)).contains("not a fragsim trace"));
    assert!(error_text(read_binary(b"")).contains("not a fragsim trace"));

    let mut bad = good.clone();
    bad[8] = 9;
    assert!(error_text(read_binary(&bad)).contains("unsupported trace version 9"));

    assert!(error_text(read_binary(&good[..40])).contains("truncated at byte 40"));
    let short = error_text(read_binary(&good[..good.len() - 1]));
    assert!(short.contains("truncated at byte"), "{short}");

    // One byte more: the head of a chunk cut short; a whole chunk more: data after the end.
    let mut longer = good.clone();
    longer.push(0);
    let msg = error_text(read_binary(&longer));
    let end = good.len();
    assert!(
        msg.contains(&format!(
            "truncated at byte {end}: the file ends inside the chunk at byte {end}"
        )),
        "{msg}"
    );
    longer.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    longer[end] = 1;
    sealed::reseal(&mut longer);
    assert!(error_text(read_binary(&longer)).contains("data after the last event"));

    // An unfinished writer's header (with its checksum).
    let unfinished = {
        let mut v = Vec::new();
        v.extend_from_slice(&good[..132]);
        v[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        sealed::reseal(&mut v);
        v
    };
    assert!(error_text(read_binary(&unfinished)).contains("unfinished"));

    // Damage is caught by the checksums: of the header, or of the chunk holding it.
    let mut bad = good.clone();
    bad[16] ^= 1;
    let msg = error_text(read_binary(&bad));
    assert!(
        msg.contains("corrupt at byte 0: the 132-byte header fails its checksum"),
        "{msg}"
    );
    let mut bad = good.clone();
    bad[140] ^= 1;
    let msg = error_text(read_binary(&bad));
    assert!(
        msg.contains("corrupt at byte 132: the chunk at byte 132 fails its checksum"),
        "{msg}"
    );

    // Resealed, damage reaches the decoder. The first event (alloc 0, at byte 140: past the
    // header and the chunk's head) turned into a free: free of a dead id.
    let mut bad = good.clone();
    bad[140] = 1;
    sealed::reseal(&mut bad);
    let msg = error_text(read_binary(&bad));
    assert!(
        msg.contains("corrupt at byte 140") && msg.contains("free of id 0"),
        "{msg}"
    );

    // Tags hold zigzag deltas of ids: 10 is +5, 5 is -3.
    let mut bad = good.clone();
    bad[140] = 5 << 2;
    sealed::reseal(&mut bad);
    assert!(error_text(read_binary(&bad)).contains("object id outside"));
    let mut bad = good.clone();
    bad[140] = 10 << 2;
    sealed::reseal(&mut bad);
    assert!(error_text(read_binary(&bad)).contains("not below the header's id limit"));
    for msg in [error_text(read_binary(&bad)), error_text(read_binary(b""))] {
        assert!(!msg.contains('\n'));
    }
}

#[test]
fn writer_refuses_inconsistent_events() {
    let mut w = TraceWriter::new(Cursor::new(Vec::new())).unwrap();
    let err = w.write(&Event::Free { id: 0 }).unwrap_err().to_string();
    assert!(
        err.contains("event 0: free of id 0, which is not live"),
        "{err}"
    );
    let err = w
        .write(&Event::Alloc {
            id: 3,
            size: 1,
            align: 0,
        })
        .unwrap_err()
        .to_string();
    assert!(err.contains("out of range"), "{err}");
}

#[test]
fn bad_text_lines_name_the_line() {
    let cases = [
        ("a 0 8\nb 1\n", "line 2: unknown line 'b'"),
        ("a 0 x\n", "line 1: size 'x' is not a non-negative integer"),
        ("a 4294967296 8\n", "line 1: id 4294967296 is out of range"),
        ("a 1 8\n", "line 1: alloc id 1 is out of range"),
        (
            "a 0 8\na 0 8\n",
            "line 2: alloc of id 0, which is already live",
        ),
        ("\n# c\nf 0\n", "line 3: free of id 0, which is not live"),
        ("a 0 8 3\n", "line 1: align 3 is not a power of two"),
        ("r 0\n", "line 1: 'r' takes ID SIZE"),
        ("a 0 -1\n", "line 1: size '-1'"),
    ];
    for (text, want) in cases {
        let got = error_text(read_text(text.as_bytes()).collect());
        assert!(got.contains(want), "{text:?}: {got}");
    }
}

#[test]
fn without_use_jemalloc_the_global_allocator_is_not_jemalloc() {
    // This test binary installs no global allocator (the library sets none): the check that
    // guards the live measurements must say so.
    assert!(!fragsim::global::jemalloc_is_global());
}

proptest! {
    /// The id pool against a model: the lowest id not live, every time.
    #[test]
    fn id_pool_hands_out_the_lowest_free_id(ops in proptest::collection::vec(any::<(bool, u16)>(), 0..300)) {
        let mut pool = IdPool::new();
        let mut live = std::collections::BTreeSet::new();
        for (take, pick) in ops {
            if take || live.is_empty() {
                let want = (0u32..).find(|i| !live.contains(i)).unwrap();
                prop_assert_eq!(pool.take(), Some(want));
                live.insert(want);
            } else {
                let id = *live.iter().nth(pick as usize % live.len()).unwrap();
                live.remove(&id);
                pool.give_back(id);
            }
        }
    }

    /// Every size falls in the bucket whose range holds it; ranges are (2^(k-1), 2^k].
    #[test]
    fn size_buckets_are_powers_of_two(size in prop_oneof![0u64..5000, any::<u64>()]) {
        let (lo, hi) = fragsim::trace::bucket_range(fragsim::trace::size_bucket(size));
        prop_assert!(lo <= size && size <= hi);
        prop_assert!(hi == 0 || hi.is_power_of_two() || hi == u64::MAX);
    }
}

#[test]
fn size_bucket_edges_by_hand() {
    use fragsim::trace::{bucket_range, size_bucket};
    let got: Vec<(u64, (u64, u64))> = [0, 1, 2, 3, 4, 5, 4096, 4097, u64::MAX]
        .iter()
        .map(|&s| (s, bucket_range(size_bucket(s))))
        .collect();
    assert_eq!(
        got,
        [
            (0, (0, 0)),
            (1, (1, 1)),
            (2, (2, 2)),
            (3, (3, 4)),
            (4, (3, 4)),
            (5, (5, 8)),
            (4096, (2049, 4096)),
            (4097, (4097, 8192)),
            (u64::MAX, ((1 << 63) + 1, u64::MAX)),
        ]
    );
}
