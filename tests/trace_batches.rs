//! The batch path (`OpenedTrace::batches`, `engine::run_trace`) against the record path it
//! shortcuts (`OpenedTrace::records`, `engine::run`): the same calls with the same indices, the
//! same thread exits and the same errors, on every committed trace and on damaged copies. The
//! record path is the reference: it decodes record by record with every check, and the other
//! trace tests check it against the writers and hand-written traces.

mod common;

use common::sealed;
use fragsim::engine::{self, Consumer, RunError, BATCH};
use fragsim::trace::{self, Batch, BetweenRecord, Call, Record};
use std::convert::Infallible;
use std::path::{Path, PathBuf};

/// What a consumer saw, in order.
#[derive(Debug, PartialEq)]
enum Seen {
    Call(u64, Call),
    Exit(u32, u64, Option<u64>),
}

struct Log(Vec<Seen>);

impl Consumer for Log {
    type Error = Infallible;

    fn call(&mut self, index: u64, call: &Call) -> Result<(), Infallible> {
        self.0.push(Seen::Call(index, *call));
        Ok(())
    }

    fn thread_exit_at(
        &mut self,
        thread: u32,
        index: u64,
        time: Option<u64>,
    ) -> Result<(), Infallible> {
        self.0.push(Seen::Exit(thread, index, time));
        Ok(())
    }
}

type Outcome = (Vec<Seen>, Result<u64, String>);

fn trace_error(e: RunError<Infallible>) -> String {
    match e {
        RunError::Trace(e) => e.to_string(),
        RunError::Consumer(never) => match never {},
    }
}

/// The trace at `path` through the record path and through the batch path.
fn both_ways(path: &Path) -> (Outcome, Outcome) {
    let mut by_records = [Log(Vec::new())];
    let records = trace::open(path).unwrap().records();
    let r = engine::run(records, &mut by_records, &|_| {}).map_err(trace_error);
    let mut by_batches = [Log(Vec::new())];
    let b = engine::run_trace(trace::open(path).unwrap(), &mut by_batches, &|_| {})
        .map_err(trace_error);
    let [Log(r_seen)] = by_records;
    let [Log(b_seen)] = by_batches;
    ((r_seen, r), (b_seen, b))
}

fn committed_traces() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for dir in ["data/traces", "data/traces/bench"] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|x| x == "trace") {
                paths.push(p);
            }
        }
    }
    paths.sort();
    assert!(paths.len() >= 8, "the committed traces: {paths:?}");
    paths
}

#[test]
fn batches_hold_every_record_of_every_committed_trace() {
    let mut exits = 0;
    for path in committed_traces() {
        let (by_records, by_batches) = both_ways(&path);
        let events = trace::open(&path).unwrap().events_hint().unwrap();
        assert_eq!(by_records.1, Ok(events), "{}", path.display());
        exits += by_records
            .0
            .iter()
            .filter(|s| matches!(s, Seen::Exit(..)))
            .count();
        assert!(by_records == by_batches, "{} differs", path.display());
    }
    // The threaded traces have exits: the batches' placing of them is checked too.
    assert!(exits > 0);
}

#[test]
fn small_batches_split_anywhere_alike() {
    // 7 records a batch: every kind of record falls on a batch boundary somewhere.
    for path in committed_traces() {
        let expected: Vec<Record> = trace::open(&path)
            .unwrap()
            .records()
            .map(Result::unwrap)
            .filter(|r| !matches!(r, Record::Site { .. }))
            .collect();
        let mut batches = trace::open(&path).unwrap().batches();
        let mut batch = Batch::with_capacity(7);
        let mut got = Vec::new();
        loop {
            batches.fill(&mut batch, 7).unwrap();
            if batch.is_empty() {
                break;
            }
            assert!(batch.len() <= 7);
            let mut done = 0;
            for b in batch.between() {
                got.extend(
                    batch.calls()[done..b.after]
                        .iter()
                        .copied()
                        .map(Record::Call),
                );
                done = b.after;
                got.push(match b.record {
                    BetweenRecord::Exit { thread, time_ns } => {
                        Record::ThreadExit { thread, time_ns }
                    }
                    BetweenRecord::Mapping { addr, len } => Record::Mapping { addr, len },
                    BetweenRecord::Control {
                        thread,
                        time_ns,
                        control,
                    } => Record::Control {
                        thread,
                        time_ns,
                        control,
                    },
                });
            }
            got.extend(batch.calls()[done..].iter().copied().map(Record::Call));
        }
        assert!(got == expected, "{} differs", path.display());
    }
}

#[test]
fn damaged_traces_fail_alike_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("damaged.trace");
    let mut cases = 0;
    // Calls only and with context (threads, times, sites).
    for name in ["cpp-maps", "cpp-threads-map"] {
        let bytes = std::fs::read(format!("data/traces/{name}.trace")).unwrap();
        // Past the header: the damage is in the records (resealed below, so that it reaches
        // the decoder rather than stopping at a chunk's checksum).
        let payload = sealed::HEADER + 8..bytes.len();
        let mut copies: Vec<Vec<u8>> = (1..8)
            .map(|k| bytes[..payload.start + payload.len() * k / 8].to_vec())
            .collect();
        for k in 1..40 {
            let mut at = payload.start + payload.len() * k / 40 + k;
            if sealed::in_chunk_head(&bytes, at) {
                at += 8;
            }
            for value in [0x00, 0x7f, 0xff, 0x05, 0x04] {
                let mut copy = bytes.clone();
                copy[at] = value;
                sealed::reseal(&mut copy);
                copies.push(copy);
            }
        }
        // Bytes after the last record.
        let mut longer = bytes.clone();
        longer.push(0);
        copies.push(longer);
        for copy in copies {
            std::fs::write(&damaged, &copy).unwrap();
            let (by_records, by_batches) = both_ways(&damaged);
            cases += by_records.1.is_err() as usize;
            assert!(
                by_records == by_batches,
                "{name}: {:?} vs {:?}",
                by_records.1,
                by_batches.1
            );
        }
    }
    // Most damages are caught (some flips give another valid trace): the error paths ran.
    assert!(cases > 100, "{cases} damaged copies refused");
}

#[test]
fn batch_size_is_what_the_engine_hands_out() {
    // One consumer's progress hears whole batches: the first report is BATCH calls on a
    // trace longer than that (cpp-maps has 302,392 calls).
    let heard = std::sync::Mutex::new(Vec::new());
    let mut log = [Log(Vec::new())];
    let opened = trace::open(Path::new("data/traces/cpp-maps.trace")).unwrap();
    let calls = engine::run_trace(opened, &mut log, &|n| heard.lock().unwrap().push(n)).unwrap();
    let heard = heard.into_inner().unwrap();
    assert_eq!(heard[0], BATCH as u64);
    assert_eq!(heard.iter().sum::<u64>(), calls);
    assert_eq!(calls, 302_392);
}
