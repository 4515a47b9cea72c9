//! The recording allocator installed as this test binary's global allocator, around jemalloc,
//! checked against std's documented Vec growth.
//!
//! Expected sequences come from `RawVec`'s growth rule in the standard library
//! (library/alloc/src/raw_vec.rs): on growth the new capacity is
//! `max(2 * cap, required, MIN_NON_ZERO_CAP)` where `MIN_NON_ZERO_CAP` is 8 for 1-byte
//! elements, 4 for elements up to 1 KiB and 1 above; the first allocation is an `alloc`, every
//! later growth a `realloc` of the same block (`Allocator::grow` -> `GlobalAlloc::realloc`).

use fragsim::global::{jemalloc_is_global, Jemalloc};
use fragsim::trace::{trace_stats, Event, RecordScope, RecordingAllocator, TraceReader};
use std::sync::Mutex;

#[global_allocator]
static RECORDER: RecordingAllocator<Jemalloc> = RecordingAllocator::new(Jemalloc);

/// One recording at a time: the test harness runs tests on several threads.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn record<T>(scope: RecordScope, work: impl FnOnce() -> T) -> (T, Vec<Event>) {
    let (result, events, issues) = record_with_issues(scope, work);
    assert_eq!(
        issues, 0,
        "frees or reallocs of memory not allocated while recording"
    );
    (result, events)
}

/// As `record`, also returning how many calls touched memory from outside the recording
/// (expected when threads hand memory to each other).
fn record_with_issues<T>(scope: RecordScope, work: impl FnOnce() -> T) -> (T, Vec<Event>, u64) {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    RECORDER.start(10_000, scope).unwrap();
    let result = work();
    let recording = RECORDER.stop();
    let events = recording.events().unwrap();
    (result, events.events, events.issues.total())
}

fn growth(id: u32, first: u64, align: u64, later: &[u64]) -> Vec<Event> {
    let mut v = vec![Event::Alloc {
        id,
        size: first,
        align,
    }];
    v.extend(later.iter().map(|&size| Event::Realloc { id, size }));
    v
}

#[test]
fn vec_u64_growth_to_100_elements() {
    let (_, events) = record(RecordScope::ThisThread, || {
        let mut v: Vec<u64> = Vec::new();
        for i in 0..100 {
            v.push(i);
        }
        drop(std::hint::black_box(v));
    });
    // Capacities 4, 8, 16, 32, 64, 128 of 8-byte elements, then the drop.
    let mut want = growth(0, 32, 8, &[64, 128, 256, 512, 1024]);
    want.push(Event::Free { id: 0 });
    assert_eq!(events, want);
}

#[test]
fn vec_u8_and_large_elements_follow_min_non_zero_cap() {
    let (_, events) = record(RecordScope::ThisThread, || {
        let mut bytes: Vec<u8> = Vec::new();
        for i in 0..20u8 {
            bytes.push(i);
        }
        let mut big: Vec<[u8; 2000]> = Vec::new();
        for _ in 0..3 {
            big.push([0; 2000]);
        }
        std::hint::black_box((&bytes, &big));
    });
    // u8: capacities 8, 16, 32 (id 0). [u8; 2000] (> 1 KiB): 1, 2, 4 (id 1). Dropped in
    // reverse declaration order.
    let mut want = growth(0, 8, 1, &[16, 32]);
    want.extend(growth(1, 2000, 1, &[4000, 8000]));
    want.push(Event::Free { id: 1 });
    want.push(Event::Free { id: 0 });
    assert_eq!(events, want);
}

#[test]
fn ids_are_recycled_lowest_first_and_alignment_is_kept() {
    #[repr(align(64))]
    struct Line([u8; 64]);
    let (_, events) = record(RecordScope::ThisThread, || {
        let a = Box::new(1u32);
        let b = Box::new(2u64);
        let c = Box::new(Line([0; 64]));
        drop(std::hint::black_box(a));
        std::hint::black_box(&c.0);
        drop(c);
        let d = std::hint::black_box(Box::new([0u16; 3]));
        drop(b);
        drop(d);
    });
    let want = vec![
        Event::Alloc {
            id: 0,
            size: 4,
            align: 4,
        },
        Event::Alloc {
            id: 1,
            size: 8,
            align: 8,
        },
        Event::Alloc {
            id: 2,
            size: 64,
            align: 64,
        },
        Event::Free { id: 0 },
        Event::Free { id: 2 },
        Event::Alloc {
            id: 0,
            size: 6,
            align: 2,
        },
        Event::Free { id: 1 },
        Event::Free { id: 0 },
    ];
    assert_eq!(events, want);
}

#[test]
fn other_threads_are_left_out_of_a_this_thread_recording_and_kept_in_all_threads() {
    // Spawning and joining hands memory between the threads, so some frees are of memory
    // the recording never saw allocated.
    let (_, events, _) = record_with_issues(RecordScope::ThisThread, || {
        std::thread::scope(|s| {
            s.spawn(|| std::hint::black_box(vec![1u8; 77]));
        });
    });
    assert!(events
        .iter()
        .all(|e| !matches!(e, Event::Alloc { size: 77, .. })));
    let (_, events, _) = record_with_issues(RecordScope::AllThreads, || {
        std::thread::scope(|s| {
            s.spawn(|| drop(std::hint::black_box(vec![1u8; 77])));
        });
    });
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Alloc { size: 77, .. })));
}

#[test]
fn a_full_buffer_is_an_error_not_a_short_trace() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    RECORDER.start(3, RecordScope::ThisThread).unwrap();
    let boxes: Vec<Box<u64>> = (0..10).map(Box::new).collect();
    drop(std::hint::black_box(boxes));
    let recording = RECORDER.stop();
    assert_eq!(recording.calls.len(), 3);
    assert!(recording.dropped > 0);
    let err = recording.events().unwrap_err().to_string();
    assert!(err.contains("did not fit"), "{err}");
}

#[test]
fn recording_writes_a_trace_file_and_jemalloc_stays_underneath() {
    assert!(
        jemalloc_is_global(),
        "the recorder must forward to jemalloc"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vec.trace");
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    RECORDER.start(1000, RecordScope::ThisThread).unwrap();
    let v: Vec<u32> = (0..1000).collect();
    drop(std::hint::black_box(v));
    let recording = RECORDER.stop();
    let header = recording.write_trace(&path).unwrap();
    let stats = trace_stats(TraceReader::open(&path).unwrap()).unwrap();
    // `collect` of an exact-size range allocates once, exactly: 4000 bytes, freed.
    assert_eq!((header.allocs, header.frees, header.reallocs), (1, 1, 0));
    assert_eq!(
        (stats.peak_requested_bytes, stats.final_requested_bytes),
        (4000, 0)
    );
}
