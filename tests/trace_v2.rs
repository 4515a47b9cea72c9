//! Trace format v2: threads, times and call sites, in the text form and the binary form.
//! Expected values are derived by hand from the traces written here.

use fragsim::trace::{
    open, read_text_records, write_records, write_text_records, Call, Control, Event, Fields,
    Frame, Record, TraceReader, TraceWriter, ALL_ARENAS,
};
use std::io::Cursor;

/// Canonical text: `t`/`T` only on change, a site before its first use, `x` ends a thread.
const V2: &str = "\
s 0 libfoo.so+0x1a2b;main;__libc_start_main
s 1 std::vector<int, std::allocator<int> >::push_back;main
T 100
a 0 24 @0
a 1 4096 64 @1
t 1
T 250
a 2 100
f 0
r 1 8192 @1
x
t 0
T 1000
f 1
f 2
t 2
a 0 16
";

fn records_of(text: &str) -> Vec<Record> {
    read_text_records(text.as_bytes(), "v2")
        .collect::<Result<_, _>>()
        .unwrap()
}

fn text_of(records: &[Record]) -> String {
    let mut out = Vec::new();
    write_text_records(&mut out, records.iter().cloned().map(Ok)).unwrap();
    String::from_utf8(out).unwrap()
}

/// `records` read back from their binary form with `fields`.
fn binary_round_trip(records: &[Record], fields: Fields) -> Vec<Record> {
    let bytes = binary_of(records, fields);
    TraceReader::new(&bytes[..])
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// What reading `text` says: its error, or what it wrongly accepted.
fn text_error(text: &str) -> String {
    read_text_records(text.as_bytes(), "bad")
        .collect::<Result<Vec<_>, _>>()
        .map(|r| format!("accepted {r:?}"))
        .unwrap_or_else(|e| e.to_string())
}

fn binary_of(records: &[Record], fields: Fields) -> Vec<u8> {
    let mut w = TraceWriter::named_with(Cursor::new(Vec::new()), "mem", fields).unwrap();
    for r in records {
        w.write_record(r).unwrap();
    }
    w.finish_into_inner().unwrap().1.into_inner()
}

#[test]
fn text_binary_text_is_the_identity() {
    let records = records_of(V2);
    assert_eq!(text_of(&records), V2);
    let bytes = binary_of(&records, Fields::ALL);
    let back: Vec<Record> = TraceReader::new(&bytes[..])
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, records);
    assert_eq!(text_of(&back), V2);
}

#[test]
fn records_carry_thread_time_and_site() {
    let records = records_of(V2);
    // Line 4: `a 0 24 @0` at T 100 on thread 0.
    assert_eq!(
        records[2],
        Record::Call(Call {
            event: Event::Alloc {
                id: 0,
                size: 24,
                align: 0
            },
            thread: 0,
            time_ns: Some(100),
            site: Some(0),
            reentrant: false,
            mallocx_flags: 0,
        })
    );
    assert_eq!(
        records[7],
        Record::ThreadExit {
            thread: 1,
            time_ns: Some(250)
        }
    );
    let Record::Site { frames, .. } = &records[0] else {
        panic!("first record is a site")
    };
    assert_eq!(
        frames[0],
        Frame::Location {
            module: "libfoo.so".into(),
            offset: 0x1a2b
        }
    );
    assert_eq!(frames[1], Frame::Symbol("main".into()));
}

#[test]
fn header_counts_threads_sites_and_duration() {
    let bytes = binary_of(&records_of(V2), Fields::ALL);
    let reader = TraceReader::new(&bytes[..]).unwrap();
    let h = *reader.header();
    assert_eq!(h.version, 4);
    assert_eq!((h.events, h.threads, h.thread_exits), (8, 3, 1));
    assert_eq!((h.sites, h.duration_ns), (2, 1000));
    // The plain iterator still yields the 8 calls.
    assert_eq!(reader.count(), 8);
}

#[test]
fn a_trace_without_context_is_the_same_bytes_either_way() {
    let events = [
        Event::Alloc {
            id: 0,
            size: 10,
            align: 0,
        },
        Event::Free { id: 0 },
    ];
    let mut plain = TraceWriter::new(Cursor::new(Vec::new())).unwrap();
    for e in &events {
        plain.write(e).unwrap();
    }
    let plain = plain.finish_into_inner().unwrap().1.into_inner();
    let records: Vec<Record> = events
        .iter()
        .map(|&e| Record::Call(Call::plain(e)))
        .collect();
    assert_eq!(binary_of(&records, Fields::NONE), plain);
    // Version 4, context flags 0 (its events are version 2's).
    assert_eq!(u32::from_le_bytes(plain[8..12].try_into().unwrap()), 4);
    assert_eq!(u64::from_le_bytes(plain[88..96].try_into().unwrap()), 0);
}

#[test]
fn times_and_threads_cost_little_per_event() {
    // 10,000 calls on 4 threads in runs of 8, 300 ns apart: a call (~2 bytes), a time delta
    // (2 bytes: 300 < 2^14) and a thread switch per run of 8 (2 bytes / 8).
    let mut records = Vec::new();
    let mut live: Vec<Vec<u32>> = vec![Vec::new(); 4];
    let mut next = 0u32;
    let mut free_ids: Vec<u32> = Vec::new();
    for i in 0..10_000u64 {
        let t = ((i / 8) % 4) as usize;
        let event = if live[t].len() > 20 {
            let id = live[t].remove(0);
            free_ids.push(id);
            Event::Free { id }
        } else {
            let id = free_ids.pop().unwrap_or_else(|| {
                next += 1;
                next - 1
            });
            live[t].push(id);
            Event::Alloc {
                id,
                size: 16 + (i % 7) * 8,
                align: 0,
            }
        };
        records.push(Record::Call(Call {
            event,
            thread: t as u32,
            time_ns: Some(i * 300),
            site: None,
            reentrant: false,
            mallocx_flags: 0,
        }));
    }
    // Ids must be lowest-free-first for the writer's density rule; free_ids as a stack keeps
    // them dense, which is all the writer checks.
    let fields = Fields {
        threads: true,
        times: true,
        sites: false,
    };
    let bytes = binary_of(&records, fields);
    let per_event = (bytes.len() - 132) as f64 / 10_000.0;
    assert!(per_event < 4.0, "{per_event} bytes per event");
}

#[test]
fn broken_context_is_refused_with_the_line() {
    for (text, what) in [
        ("t 2\na 0 1\n", "skips ids"),
        ("T 5\nT 4\n", "before the previous time"),
        ("a 0 1 @0\n", "site 0 used before it is defined"),
        ("t 1\nx\na 0 1\n", "after its exit"),
        ("s 1 main\n", "out of order"),
        ("f 0 @0\n", "free"),
    ] {
        let err = read_text_records(text.as_bytes(), "bad")
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err()
            .to_string();
        assert!(err.contains(what), "{text:?}: {err}");
        assert!(err.contains("line"), "{text:?}: {err}");
    }
}

#[test]
fn a_writer_refuses_context_it_was_not_created_with() {
    let mut w = TraceWriter::new(Cursor::new(Vec::new())).unwrap();
    let call = Call {
        event: Event::Alloc {
            id: 0,
            size: 1,
            align: 0,
        },
        thread: 1,
        time_ns: None,
        site: None,
        reentrant: false,
        mallocx_flags: 0,
    };
    let err = w.write_record(&Record::Call(call)).unwrap_err().to_string();
    assert!(err.contains("without"), "{err}");
}

#[test]
fn open_detects_binary_text_and_refuses_a_valgrind_log() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("t.txt");
    std::fs::write(&text, V2).unwrap();
    let bin = dir.path().join("t.trace");
    write_records(&bin, Fields::ALL, records_of(V2).into_iter().map(Ok)).unwrap();
    for path in [&text, &bin] {
        let records: Vec<Record> = open(path)
            .unwrap()
            .records()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(records, records_of(V2), "{}", path.display());
    }
    let log = dir.path().join("v.log");
    std::fs::write(&log, "==123== Memcheck, a memory error detector\n").unwrap();
    let err = open(&log).unwrap_err().to_string();
    assert!(
        err.contains("valgrind log") && err.contains("v.log"),
        "{err}"
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    assert!(open(&empty).unwrap_err().to_string().contains("empty file"));
    let binary_junk = dir.path().join("junk");
    std::fs::write(&binary_junk, [0xffu8, 0xfe, 0, 1]).unwrap();
    let err = open(&binary_junk).unwrap_err().to_string();
    assert!(
        err.contains("not a trace") && !err.contains("UTF-8 stream"),
        "{err}"
    );
}

#[test]
fn damaged_headers_have_their_own_messages() {
    let bytes = binary_of(&records_of(V2), Fields::ALL);
    let cut = &bytes[..40];
    let err = TraceReader::new(cut).err().unwrap().to_string();
    assert!(err.contains("ends inside its"), "{err}");
    let mut len = bytes.clone();
    len[12] ^= 0x10;
    // A longer length may be a recording's block: the header's checksum, which covers the
    // length, then fails.
    let err = TraceReader::new(&len[..]).err().unwrap().to_string();
    assert!(
        err.contains("header is corrupt") || err.contains("header fails its checksum"),
        "{err}"
    );
    let mut truncated = bytes.clone();
    truncated.truncate(bytes.len() - 3);
    let err = TraceReader::new(&truncated[..])
        .unwrap()
        .records()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("truncated") || err.contains("cut short"),
        "{err}"
    );
}

/// A record the writer refuses changes nothing: here a free of a dead object on a new thread
/// at a later time. Had the writer kept the new thread or the time, thread 2 would be
/// accepted next (it is not: thread 1 is still the next new one) and time 5 would be refused.
#[test]
fn a_refused_record_changes_nothing() {
    let fields = Fields {
        threads: true,
        times: true,
        sites: false,
    };
    let mut w = TraceWriter::named_with(Cursor::new(Vec::new()), "mem", fields).unwrap();
    let call = |event, thread, time_ns| {
        Record::Call(Call {
            event,
            thread,
            time_ns: Some(time_ns),
            site: None,
            reentrant: false,
            mallocx_flags: 0,
        })
    };
    let alloc = Event::Alloc {
        id: 0,
        size: 8,
        align: 0,
    };
    w.write_record(&call(alloc, 0, 1)).unwrap();
    let err = w
        .write_record(&call(Event::Free { id: 1 }, 1, 10))
        .unwrap_err()
        .to_string();
    assert!(err.contains("id 1"), "{err}");
    let skip = w
        .write_record(&call(Event::Free { id: 0 }, 2, 5))
        .unwrap_err()
        .to_string();
    assert!(skip.contains("skips ids"), "{skip}");
    w.write_record(&call(Event::Free { id: 0 }, 1, 5)).unwrap();
    let header = w.header_so_far();
    assert_eq!((header.threads, header.duration_ns), (2, 5));
}

/// A reentrant call (made inside another allocator call of its thread, issue 40 §5) keeps its
/// mark: an `e` line before it in the text form, a mark record in the binary form (version 3:
/// a writer without context refuses it); `e` before anything but a call is refused.
#[test]
fn a_reentrant_call_keeps_its_mark() {
    let text = "a 0 24\ne\na 1 320\nf 0\ne\nf 1\n";
    let records = records_of(text);
    let marks: Vec<bool> = records
        .iter()
        .map(|r| matches!(r, Record::Call(c) if c.reentrant))
        .collect();
    assert_eq!(marks, [false, true, false, true]);
    assert_eq!(text_of(&records), text);
    let threads = Fields {
        threads: true,
        times: false,
        sites: false,
    };
    let bytes = binary_of(&records, threads);
    let back: Vec<Record> = TraceReader::new(&bytes[..])
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, records);
    let mut w = TraceWriter::new(Cursor::new(Vec::new())).unwrap();
    let err = w.write_record(&records[1]).unwrap_err().to_string();
    assert!(err.contains("without"), "{err}");
    for bad in ["e\nx\n", "e\nt 0\na 0 1\n", "e 1\na 0 1\n"] {
        let err = read_text_records(bad.as_bytes(), "bad")
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("line"), "{bad:?}: {err}");
    }
}

/// A recording's allocator mappings (`m ADDR LEN`) and a call's `MALLOCX_` flags (`j FLAGS`,
/// issue 40) come back as they went, through the text and the binary forms; `j` with bits
/// outside 8-31 (the alignment, `MALLOCX_ZERO`) or before anything but a call is refused.
#[test]
fn mappings_and_mallocx_flags_round_trip() {
    let text = "m 0x7f0000200000 2097152\na 0 24\ne\nj 0x6500100\na 1 320\nj 0x100\nf 1\nf 0\n";
    let records = records_of(text);
    assert_eq!(
        records[0],
        Record::Mapping {
            addr: 0x7f00_0020_0000,
            len: 2 << 20
        }
    );
    let calls: Vec<(bool, u32)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Call(c) => Some((c.reentrant, c.mallocx_flags)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [(false, 0), (true, 0x650_0100), (false, 0x100), (false, 0)]
    );
    let Record::Call(c) = &records[2] else {
        panic!()
    };
    assert_eq!((c.explicit_arena(), c.tcache_off()), (Some(100), true));
    assert_eq!(text_of(&records), text);
    let threads = Fields {
        threads: true,
        times: false,
        sites: false,
    };
    assert_eq!(binary_round_trip(&records, threads), records);
    for bad in [
        "j 0x3f\na 0 1\n",
        "j 0x100\nx\n",
        "j 0x100\n",
        "m 12\n",
        "m zz 4096\n",
    ] {
        let err = text_error(bad);
        assert!(err.contains("line"), "{bad:?}: {err}");
    }
}

/// `mallctl` writes (`c ...`, issue 40 §5) come back as they went, through the text and the
/// binary forms (with times: a control carries one); a bad one, or one after `e` or `j`, is
/// refused naming its line.
#[test]
fn controls_round_trip() {
    let text = "T 1\na 0 24\nc flush\nt 1\nT 5\nc purge all\nc purge 3\nc decay 4096\nc decay 7\nc arena 12\nc tcache off\nc tcache on\nc cache create 3\nc cache flush 3\nc cache destroy 3\nc background on\nc background off\nT 9\nf 0\n";
    let records = records_of(text);
    let controls: Vec<Control> = records
        .iter()
        .filter_map(|r| match r {
            Record::Control { control, .. } => Some(*control),
            _ => None,
        })
        .collect();
    assert_eq!(
        controls,
        [
            Control::FlushCache,
            Control::Purge { arena: ALL_ARENAS },
            Control::Purge { arena: 3 },
            Control::Decay { arena: ALL_ARENAS },
            Control::Decay { arena: 7 },
            Control::BindArena { arena: 12 },
            Control::CacheEnabled { on: false },
            Control::CacheEnabled { on: true },
            Control::CacheCreate { cache: 3 },
            Control::CacheFlush { cache: 3 },
            Control::CacheDestroy { cache: 3 },
            Control::BackgroundThreads { on: true },
            Control::BackgroundThreads { on: false },
        ]
    );
    assert_eq!(text_of(&records), text.replace("decay 4096", "decay all"));
    let fields = Fields {
        threads: true,
        times: true,
        sites: false,
    };
    assert_eq!(binary_round_trip(&records, fields), records);
    for bad in [
        "c\n",
        "c flush 1\n",
        "c purge\n",
        "c purge x\n",
        "c arena all\n",
        "c reset\n",
        "c tcache\n",
        "c tcache 1\n",
        "c cache create\n",
        "c cache make 1\n",
        "c cache flush x\n",
        "c background yes\n",
        "e\nc flush\n",
        "j 0x100\nc flush\n",
    ] {
        let err = text_error(bad);
        assert!(
            err.contains("line 1") || err.contains("line 2"),
            "{bad:?}: {err}"
        );
    }
}
