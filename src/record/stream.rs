//! Converting while the program runs: the root process's raw file is indexed as it grows and
//! merged up to the progress mark its chunks carry (every event numbered below it is in the
//! file), so that when the program exits only the rest is left to convert.

use super::convert::{ConvertSummary, ConvertThreads, Sink, StreamConverter};
use super::raw::RawProcess;
use super::RecordProgress;
use crate::trace::TraceError;
use std::cell::Cell;
use std::path::Path;
use std::time::Duration;

/// How long to wait for more of the file when it has not grown (the program's threads write
/// 1 MiB at a time, every few ms under a busy program; the thread that sees the program exit
/// wakes this one at once, so the wait only sets how far behind the conversion may fall).
const POLL: Duration = Duration::from_millis(10);

/// Converts the raw file `raw` into `sink` while the program writes it, until `ended` (the
/// program has exited; whoever sets it unparks this thread), on `threads` beside this one.
/// Then `progress` is told how many bytes of raw events are left
/// ([`RecordProgress::Converting`]) and how many more of those are converted, chunk by chunk.
pub(crate) fn convert_while_running<'a>(
    raw: &Path,
    sink: &'a mut Sink<'a>,
    ended: &dyn Fn() -> bool,
    threads: ConvertThreads,
    progress: &mut dyn FnMut(RecordProgress),
) -> Result<ConvertSummary, TraceError> {
    let name = raw.display().to_string();
    let mut process = RawProcess::default();
    let converted = Cell::new(0u64);
    let announced = Cell::new(false);
    let progress = std::cell::RefCell::new(progress);
    let mut count = |bytes: u64| {
        if announced.get() {
            (progress.borrow_mut())(RecordProgress::Converted(bytes))
        } else {
            converted.set(converted.get() + bytes)
        }
    };
    // The file's size is not known yet: room for two million live objects from the start
    // (the table's growth was 2% of a conversion that started small; untouched room costs
    // only address space), more as needed.
    let mut stream = StreamConverter::new(&name, sink, &mut count, 1 << 21).with_threads(threads);
    loop {
        // Read before the file: once the program has ended, this look at it is the last.
        let done = ended();
        let grew = process.poll(raw)?;
        if done {
            announced.set(true);
            let left = process.event_bytes().saturating_sub(converted.get());
            (progress.borrow_mut())(RecordProgress::Converting { total: left });
            stream.step(&process, true)?;
            return Ok(stream.finish(&process));
        }
        if grew {
            stream.step(&process, false)?;
        } else {
            std::thread::park_timeout(POLL);
        }
    }
}
