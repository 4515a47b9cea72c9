//! The plain text form, one event per line: `a ID SIZE [ALIGN]`, `f ID`, `r ID SIZE`; `#`
//! starts a comment, blank lines are ignored. `dump` writes exactly this (align only when not
//! 0), so text -> binary -> text is the identity on that canonical form.

use super::tally::Tally;
use super::{Event, ObjectId, TraceError};
use std::io::{BufRead, BufWriter, Write};

/// The events of a text trace; each line is parsed and checked against the lines before it by
/// the same rules as [`super::TraceWriter`]. Errors name the line; after one the iterator ends.
pub fn read_text<R: BufRead>(r: R) -> TextReader<R> {
    read_text_named(r, "<input>")
}

/// As [`read_text`], naming the source in errors.
pub fn read_text_named<R: BufRead>(r: R, name: &str) -> TextReader<R> {
    TextReader {
        inner: r,
        name: name.to_string(),
        line: String::new(),
        line_no: 0,
        tally: Tally::new(),
        done: false,
    }
}

/// Iterator returned by [`read_text`].
pub struct TextReader<R> {
    inner: R,
    name: String,
    line: String,
    line_no: u64,
    tally: Tally,
    done: bool,
}

impl<R: BufRead> TextReader<R> {
    fn error(&self, what: String) -> TraceError {
        TraceError::Line {
            file: self.name.clone(),
            line: self.line_no,
            what,
        }
    }

    fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        loop {
            self.line.clear();
            let n = self
                .inner
                .read_line(&mut self.line)
                .map_err(|e| TraceError::io(&self.name, e))?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let content = self.line.split('#').next().unwrap_or("");
            let fields: Vec<&str> = content.split_whitespace().collect();
            if fields.is_empty() {
                continue;
            }
            let event = parse_fields(&fields).map_err(|what| self.error(what))?;
            self.tally.apply(&event).map_err(|what| self.error(what))?;
            return Ok(Some(event));
        }
    }
}

impl<R: BufRead> Iterator for TextReader<R> {
    type Item = Result<Event, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_event().transpose();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
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

fn parse_fields(fields: &[&str]) -> Result<Event, String> {
    let arity = |expected: &str| {
        format!(
            "'{}' takes {expected}, got {} field(s)",
            fields[0],
            fields.len() - 1
        )
    };
    match fields[0] {
        "a" => {
            if !(3..=4).contains(&fields.len()) {
                return Err(arity("ID SIZE [ALIGN]"));
            }
            let align = match fields.get(3) {
                Some(a) => number(a, "align")?,
                None => 0,
            };
            Ok(Event::Alloc {
                id: id(fields[1])?,
                size: number(fields[2], "size")?,
                align,
            })
        }
        "f" if fields.len() == 2 => Ok(Event::Free { id: id(fields[1])? }),
        "f" => Err(arity("ID")),
        "r" if fields.len() == 3 => Ok(Event::Realloc {
            id: id(fields[1])?,
            size: number(fields[2], "size")?,
        }),
        "r" => Err(arity("ID SIZE")),
        other => Err(format!(
            "unknown event '{other}' (expected 'a', 'f' or 'r')"
        )),
    }
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
    let mut out = BufWriter::with_capacity(1 << 16, w);
    let io = |e| TraceError::io("<output>", e);
    let mut count = 0;
    for event in events {
        let event = event?;
        match event {
            Event::Alloc { id, size, align: 0 } => writeln!(out, "a {id} {size}"),
            Event::Alloc { id, size, align } => writeln!(out, "a {id} {size} {align}"),
            Event::Free { id } => writeln!(out, "f {id}"),
            Event::Realloc { id, size } => writeln!(out, "r {id} {size}"),
        }
        .map_err(io)?;
        count += 1;
    }
    out.flush().map_err(io)?;
    Ok(count)
}
