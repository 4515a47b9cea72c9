//! The plain text form, one record per line: `a ID SIZE [ALIGN] [@SITE]`, `f ID`,
//! `r ID SIZE [@SITE]`, and for format v2 `t TID` (the following lines run on thread TID),
//! `T NS` (they happen at NS ns since the start), `s SITE FRAME;FRAME;...` (a call site, frames
//! innermost first), `x` (the current thread exits) and `e` (the next line's call is
//! reentrant: made inside another allocator call of its thread), `m ADDR LEN` (a mapping the
//! allocator made, `ADDR` in hex), `j FLAGS` (the next line's call came through jemalloc's
//! `mallocx` family with these `MALLOCX_` arena and cache flags), `c CONTROL` (the thread's
//! `mallctl` write: `flush`, `purge I`, `decay I`, `arena I`; `all` for every arena). `#` starts a comment (not on `s`
//! lines, whose frames are the rest of the line), blank lines are ignored. `dump` writes
//! exactly this (align only when not 0, `t`/`T` only when they change, from thread 0 at time
//! 0), so text -> binary -> text is the identity on that canonical form.

use super::flow::{Fields, Flow};
use super::tally::Tally;
use super::{Call, Control, Event, Frame, ObjectId, Record, SiteTable, TraceError};
use std::io::{BufRead, BufWriter, Write};

/// The events (calls) of a text trace; each line is parsed and checked against the lines
/// before it by the same rules as [`super::TraceWriter`]. Errors name the line; after one the
/// iterator ends.
pub fn read_text<R: BufRead>(r: R) -> TextReader<R> {
    read_text_named(r, "<input>")
}

/// As [`read_text`], naming the source in errors.
pub fn read_text_named<R: BufRead>(r: R, name: &str) -> TextReader<R> {
    TextReader {
        records: read_text_records(r, name),
    }
}

/// The records of a text trace (calls with their context, thread exits, sites).
pub fn read_text_records<R: BufRead>(r: R, name: &str) -> TextRecords<R> {
    TextRecords {
        inner: r,
        name: name.to_string(),
        line: String::new(),
        line_no: 0,
        tally: Tally::new(),
        flow: Flow::new(Fields::ALL),
        time: None,
        seen: Fields::NONE,
        sites: SiteTable::new(),
        done: false,
        reentrant: false,
        mallocx_flags: 0,
    }
}

/// Iterator returned by [`read_text`]: the calls of [`TextRecords`].
pub struct TextReader<R> {
    records: TextRecords<R>,
}

impl<R: BufRead> Iterator for TextReader<R> {
    type Item = Result<Event, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.records.next()? {
                Ok(Record::Call(call)) => return Some(Ok(call.event)),
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// Iterator returned by [`read_text_records`].
pub struct TextRecords<R> {
    inner: R,
    name: String,
    line: String,
    line_no: u64,
    tally: Tally,
    flow: Flow,
    /// The time of the latest `T` line (`None` before the first).
    time: Option<u64>,
    seen: Fields,
    sites: SiteTable,
    done: bool,
    /// An `e` line came: the next line is a reentrant call.
    reentrant: bool,
    /// A `j FLAGS` line came: the next line's call has these `MALLOCX_` flags.
    mallocx_flags: u32,
}

impl<R: BufRead> TextRecords<R> {
    /// The context the lines read so far used (all of the trace once it is read).
    pub fn fields(&self) -> Fields {
        self.seen
    }

    /// The call stacks defined so far.
    pub fn sites(&self) -> &SiteTable {
        &self.sites
    }

    fn error(&self, what: String) -> TraceError {
        TraceError::Line {
            file: self.name.clone(),
            line: self.line_no,
            what,
        }
    }

    fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        loop {
            self.line.clear();
            let n = self
                .inner
                .read_line(&mut self.line)
                .map_err(|e| TraceError::io(&self.name, e))?;
            if n == 0 {
                if self.reentrant || self.mallocx_flags != 0 {
                    let mark = if self.mallocx_flags != 0 { 'j' } else { 'e' };
                    return Err(self.error(format!(
                        "'{mark}' at the end of the trace (its call's line must follow it)"
                    )));
                }
                return Ok(None);
            }
            self.line_no += 1;
            let line = std::mem::take(&mut self.line);
            let parsed = self.parse_line(&line);
            self.line = line;
            match parsed.map_err(|what| self.error(what))? {
                Some(record) => return Ok(Some(record)),
                None => continue,
            }
        }
    }

    /// One line: a record, or `None` for a blank line, a comment or a `t`/`T` line.
    fn parse_line(&mut self, line: &str) -> Result<Option<Record>, String> {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("s ") {
            return self.site_line(rest).map(Some);
        }
        let content = line.split('#').next().unwrap_or("");
        let fields: Vec<&str> = content.split_whitespace().collect();
        let Some(&first) = fields.first() else {
            return Ok(None);
        };
        let reentrant = std::mem::take(&mut self.reentrant);
        let mallocx_flags = std::mem::take(&mut self.mallocx_flags);
        if reentrant && !matches!(first, "a" | "f" | "r" | "j") {
            return Err(format!(
                "'{first}' after 'e' (a reentrant call's line must follow it)"
            ));
        }
        if mallocx_flags != 0 && !matches!(first, "a" | "f" | "r") {
            return Err(format!(
                "'{first}' after 'j' (the call's line must follow it)"
            ));
        }
        match first {
            "e" if fields.len() == 1 => {
                self.reentrant = true;
                self.seen.threads = true;
                Ok(None)
            }
            "e" => Err(arity(&fields, "nothing")),
            "j" => {
                let [_, flags] = fields[..] else {
                    return Err(arity(&fields, "FLAGS"));
                };
                let parsed = match flags.strip_prefix("0x") {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => flags.parse().ok(),
                };
                let f = parsed.filter(|&f| f != 0 && f & 0xff == 0).ok_or_else(|| {
                    format!("MALLOCX flags '{flags}' are not a number of bits 8-31 (arena, thread cache)")
                })?;
                // Both marks on one call: `e` comes first.
                self.reentrant = reentrant;
                self.mallocx_flags = f;
                self.seen.threads = true;
                Ok(None)
            }
            "t" => {
                let [_, tid] = fields[..] else {
                    return Err(arity(&fields, "TID"));
                };
                let tid = number(tid, "thread")?;
                let tid = u32::try_from(tid)
                    .map_err(|_| format!("thread {tid} is out of range (0..=4294967295)"))?;
                // Checked like a call on it, so a bad `t` line is the line reported.
                if tid > self.flow.threads {
                    return Err(format!(
                        "thread {tid} skips ids: threads are numbered in order of first appearance (the next new thread is {})",
                        self.flow.threads
                    ));
                }
                self.flow.thread = tid;
                self.seen.threads |= tid != 0;
                Ok(None)
            }
            "T" => {
                let [_, ns] = fields[..] else {
                    return Err(arity(&fields, "NS"));
                };
                let ns = number(ns, "time")?;
                if ns < self.time.unwrap_or(0) {
                    return Err(format!(
                        "time {ns} ns is before the previous time {} ns (times never decrease)",
                        self.time.unwrap_or(0)
                    ));
                }
                self.time = Some(ns);
                self.seen.times = true;
                Ok(None)
            }
            "x" if fields.len() == 1 => {
                let record = Record::ThreadExit {
                    thread: self.flow.thread,
                    time_ns: self.time,
                };
                self.flow.other(&record)?;
                self.seen.threads = true;
                Ok(Some(record))
            }
            "x" => Err(arity(&fields, "nothing")),
            "c" => {
                let record = Record::Control {
                    thread: self.flow.thread,
                    time_ns: self.time,
                    control: Control::parse(&fields[1..])?,
                };
                self.flow.other(&record)?;
                self.seen.threads = true;
                Ok(Some(record))
            }
            "m" => {
                let [_, addr, len] = fields[..] else {
                    return Err(arity(&fields, "ADDR LEN"));
                };
                let addr = match addr.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16)
                        .map_err(|_| format!("mapping address '{addr}' is not a hex number"))?,
                    None => number(addr, "mapping address")?,
                };
                let len = number(len, "mapping length")?;
                self.seen.threads = true;
                Ok(Some(Record::Mapping { addr, len }))
            }
            _ => {
                let (event, site) = parse_call(&fields)?;
                let call = Call {
                    event,
                    thread: self.flow.thread,
                    time_ns: self.time,
                    site,
                    reentrant,
                    mallocx_flags,
                };
                self.flow.call(&call)?;
                self.tally.apply(&event)?;
                Ok(Some(Record::Call(call)))
            }
        }
    }

    fn site_line(&mut self, rest: &str) -> Result<Record, String> {
        let rest = rest.trim();
        let (id, frames) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let id = number(id, "site")?;
        let id = u32::try_from(id).map_err(|_| format!("site {id} is out of range"))?;
        let frames: Vec<Frame> = frames
            .trim()
            .split(';')
            .filter(|f| !f.is_empty())
            .map(Frame::parse)
            .collect();
        let record = Record::Site { id, frames };
        self.flow.other(&record)?;
        if let Record::Site { id, frames } = &record {
            self.sites.push(*id, frames.clone())?;
        }
        self.seen.sites = true;
        Ok(record)
    }
}

impl<R: BufRead> Iterator for TextRecords<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_record().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

fn arity(fields: &[&str], expected: &str) -> String {
    format!(
        "'{}' takes {expected}, got {} field(s)",
        fields[0],
        fields.len() - 1
    )
}

fn number(field: &str, what: &str) -> Result<u64, String> {
    field
        .parse::<u64>()
        .map_err(|_| format!("{what} '{field}' is not a non-negative integer"))
}

fn id(field: &str) -> Result<ObjectId, String> {
    let v = number(field, "id")?;
    ObjectId::try_from(v).map_err(|_| format!("id {v} is out of range (ids are 0..=4294967295)"))
}

/// An `a`, `f` or `r` line, with its optional `@SITE` at the end.
fn parse_call(fields: &[&str]) -> Result<(Event, Option<u32>), String> {
    let (fields, site) = match fields.split_last() {
        Some((last, rest)) if last.starts_with('@') && !rest.is_empty() => {
            let s = number(&last[1..], "site")?;
            let s = u32::try_from(s).map_err(|_| format!("site {s} is out of range"))?;
            (rest, Some(s))
        }
        _ => (fields, None),
    };
    let event = match fields[0] {
        "a" => {
            if !(3..=4).contains(&fields.len()) {
                return Err(arity(fields, "ID SIZE [ALIGN] [@SITE]"));
            }
            let align = match fields.get(3) {
                Some(a) => number(a, "align")?,
                None => 0,
            };
            Event::Alloc {
                id: id(fields[1])?,
                size: number(fields[2], "size")?,
                align,
            }
        }
        "f" if fields.len() == 2 && site.is_none() => Event::Free { id: id(fields[1])? },
        "f" if fields.len() == 2 => return Err("a free takes no call site".into()),
        "f" => return Err(arity(fields, "ID")),
        "r" if fields.len() == 3 => Event::Realloc {
            id: id(fields[1])?,
            size: number(fields[2], "size")?,
        },
        "r" => return Err(arity(fields, "ID SIZE [@SITE]")),
        other => {
            return Err(format!(
                "unknown line '{other}' (expected 'a', 'f', 'r', 't', 'T', 's', 'x', 'e', 'j', 'm' or 'c')"
            ))
        }
    };
    Ok((event, site))
}

/// Formats one event as its text line (without the newline).
pub fn event_line(event: &Event) -> String {
    match *event {
        Event::Alloc { id, size, align: 0 } => format!("a {id} {size}"),
        Event::Alloc { id, size, align } => format!("a {id} {size} {align}"),
        Event::Free { id } => format!("f {id}"),
        Event::Realloc { id, size } => format!("r {id} {size}"),
    }
}

/// Writes events in the text form; returns how many. Stops at the first error of `events`.
pub fn write_text<W, I>(w: W, events: I) -> Result<u64, TraceError>
where
    W: Write,
    I: IntoIterator<Item = Result<Event, TraceError>>,
{
    write_text_records(
        w,
        events
            .into_iter()
            .map(|e| e.map(|e| Record::Call(Call::plain(e)))),
    )
}

/// Writes records in the canonical text form; returns how many calls. Stops at the first
/// error of `records`.
pub fn write_text_records<W, I>(w: W, records: I) -> Result<u64, TraceError>
where
    W: Write,
    I: IntoIterator<Item = Result<Record, TraceError>>,
{
    let mut out = BufWriter::with_capacity(1 << 16, w);
    let io = |e| TraceError::io("<output>", e);
    let mut calls = 0;
    let (mut thread, mut time) = (0u32, 0u64);
    let mut context = |out: &mut BufWriter<W>, t: u32, ns: Option<u64>| -> std::io::Result<()> {
        if t != thread {
            writeln!(out, "t {t}")?;
            thread = t;
        }
        if let Some(ns) = ns.filter(|&ns| ns != time) {
            writeln!(out, "T {ns}")?;
            time = ns;
        }
        Ok(())
    };
    for record in records {
        match record? {
            Record::Call(call) => {
                context(&mut out, call.thread, call.time_ns).map_err(io)?;
                if call.reentrant {
                    writeln!(out, "e").map_err(io)?;
                }
                if call.mallocx_flags != 0 {
                    writeln!(out, "j {:#x}", call.mallocx_flags).map_err(io)?;
                }
                let line = event_line(&call.event);
                match call.site {
                    Some(s) => writeln!(out, "{line} @{s}"),
                    None => writeln!(out, "{line}"),
                }
                .map_err(io)?;
                calls += 1;
            }
            Record::ThreadExit { thread, time_ns } => {
                context(&mut out, thread, time_ns).map_err(io)?;
                writeln!(out, "x").map_err(io)?;
            }
            Record::Site { id, frames } => {
                let joined: Vec<String> = frames.iter().map(ToString::to_string).collect();
                writeln!(out, "s {id} {}", joined.join(";")).map_err(io)?;
            }
            Record::Mapping { addr, len } => writeln!(out, "m {addr:#x} {len}").map_err(io)?,
            Record::Control {
                thread,
                time_ns,
                control,
            } => {
                context(&mut out, thread, time_ns).map_err(io)?;
                writeln!(out, "c {}", control.words()).map_err(io)?;
            }
        }
    }
    out.flush().map_err(io)?;
    Ok(calls)
}
