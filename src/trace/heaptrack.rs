//! Importing heaptrack's raw output (`heaptrack -r PROGRAM`, `heaptrack.NAME.PID.raw.zst`).
//!
//! The raw file is a line-oriented log, all numbers in hex: `m PATHLEN PATH BASE (VADDR MEMSZ)*`
//! loads a module (`m 1 -` clears the list), `t IP PARENT` adds a node to the trace tree (node
//! numbers count from 1; parent 0 is the root), `+ SIZE TRACE PTR` is an allocation made from
//! trace node TRACE, `- PTR` a free, `c MS` the milliseconds since the start. Other lines
//! (`v`, `x`, `X`, `I`, `R` resident pages, `A` attach) describe the run. heaptrack records no
//! thread, no alignment, and a realloc as a free and an allocation, so the trace has none of
//! them; [`HeaptrackSummary`] says so. heaptrack's default output is interpreted (`i`/`s`
//! lines, allocations by index, no pointers): it no longer says which object a free releases,
//! and is refused.

use super::addr::{AddressImporter, IssueCounts};
use super::{Call, Event, Frame, Record, SiteId, TraceError};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};

/// What an import read and what it could not carry over.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HeaptrackSummary {
    pub lines: u64,
    pub allocations: u64,
    pub frees: u64,
    /// Frees of a null pointer (nothing released).
    pub null_frees: u64,
    pub sites: u64,
    /// The last `c` line, in ms.
    pub duration_ms: u64,
    pub issues: IssueCounts,
}

impl HeaptrackSummary {
    /// What heaptrack's format cannot say, for the import's note.
    pub const LIMITS: &'static str = "heaptrack records no threads (all calls are on thread 0), no alignment, and realloc as free + malloc";
}

struct Module {
    path: String,
    base: u64,
    /// (start, end) of its segments, absolute.
    ranges: Vec<(u64, u64)>,
}

/// The import's state: the trace tree, modules, sites made so far.
struct Importer {
    name: String,
    line_no: u64,
    modules: Vec<Module>,
    /// Trace node -> (ip, parent).
    nodes: Vec<(u64, u32)>,
    /// Trace node -> site, once a call used it.
    sites: HashMap<u32, SiteId>,
    addresses: AddressImporter,
    time_ns: u64,
    /// The executable (the `x` line): heaptrack names its module `x`.
    exe: String,
    summary: HeaptrackSummary,
    events: Vec<Event>,
}

impl Importer {
    fn error(&self, what: impl Into<String>) -> TraceError {
        TraceError::Line {
            file: self.name.clone(),
            line: self.line_no,
            what: what.into(),
        }
    }

    fn hex(&self, field: Option<&str>, what: &str) -> Result<u64, TraceError> {
        let field = field.ok_or_else(|| self.error(format!("missing {what}")))?;
        u64::from_str_radix(field, 16)
            .map_err(|_| self.error(format!("{what} '{field}' is not a hex number")))
    }

    /// The frame of an instruction pointer: its module and the offset from its base.
    fn frame(&self, ip: u64) -> Frame {
        for m in &self.modules {
            if m.ranges.iter().any(|&(lo, hi)| (lo..hi).contains(&ip)) {
                let module = m.path.rsplit('/').next().unwrap_or(&m.path).to_string();
                return Frame::Location {
                    module,
                    offset: ip - m.base,
                };
            }
        }
        Frame::Location {
            module: "?".into(),
            offset: ip,
        }
    }

    /// The site of trace node `node`, defining it (a `Site` record) on first use.
    fn site(&mut self, node: u32, out: &mut Vec<Record>) -> Result<Option<SiteId>, TraceError> {
        if node == 0 {
            return Ok(None);
        }
        if let Some(&s) = self.sites.get(&node) {
            return Ok(Some(s));
        }
        let mut frames = Vec::new();
        let mut n = node;
        while n != 0 {
            let &(ip, parent) = self
                .nodes
                .get(n as usize - 1)
                .ok_or_else(|| self.error(format!("trace node {n:x} is not defined")))?;
            frames.push(self.frame(ip));
            if parent >= n || frames.len() > super::codec::MAX_FRAMES {
                return Err(self.error(format!("trace node {n:x} has a bad parent {parent:x}")));
            }
            n = parent;
        }
        let id = self.sites.len() as SiteId;
        self.sites.insert(node, id);
        self.summary.sites += 1;
        out.push(Record::Site { id, frames });
        Ok(Some(id))
    }

    fn line(&mut self, line: &str, out: &mut Vec<Record>) -> Result<(), TraceError> {
        let mut f = line.split_whitespace();
        let Some(kind) = f.next() else { return Ok(()) };
        match kind {
            "x" => {
                let _len = f.next();
                self.exe = f.collect::<Vec<_>>().join(" ");
            }
            "m" => {
                let _len = f.next();
                let path = f
                    .next()
                    .ok_or_else(|| self.error("module without a path"))?;
                if path == "-" {
                    self.modules.clear();
                    return Ok(());
                }
                let base = self.hex(f.next(), "module base")?;
                let mut ranges = Vec::new();
                while let Some(vaddr) = f.next() {
                    let vaddr = self.hex(Some(vaddr), "segment address")?;
                    let size = self.hex(f.next(), "segment size")?;
                    ranges.push((base + vaddr, base + vaddr + size));
                }
                let path = if path == "x" { self.exe.as_str() } else { path };
                self.modules.push(Module {
                    path: path.to_string(),
                    base,
                    ranges,
                });
            }
            "t" => {
                let ip = self.hex(f.next(), "instruction pointer")?;
                let parent = self.hex(f.next(), "parent")?;
                let parent =
                    u32::try_from(parent).map_err(|_| self.error("parent out of range"))?;
                self.nodes.push((ip, parent));
            }
            "+" => {
                let size = self.hex(f.next(), "size")?;
                let node = self.hex(f.next(), "trace")?;
                let node = u32::try_from(node).map_err(|_| self.error("trace out of range"))?;
                let ptr = self.hex(f.next(), "pointer")?;
                let site = self.site(node, out)?;
                self.addresses
                    .alloc(ptr, size, 0, &mut self.events)
                    .map_err(|_| self.error("more than 2^32 live objects"))?;
                self.summary.allocations += 1;
                self.flush(site, out);
            }
            "-" => {
                let ptr = self.hex(f.next(), "pointer")?;
                self.summary.frees += 1;
                if ptr == 0 {
                    self.summary.null_frees += 1;
                } else {
                    self.addresses.free(ptr, &mut self.events);
                    self.flush(None, out);
                }
            }
            "c" => {
                let ms = self.hex(f.next(), "time")?;
                self.summary.duration_ms = self.summary.duration_ms.max(ms);
                self.time_ns = self.time_ns.max(ms.saturating_mul(1_000_000));
            }
            "s" | "i" | "a" => {
                return Err(self.error(format!(
                    "an interpreted heaptrack file ('{kind}' lines): it no longer says which object a free releases; record raw data with `heaptrack -r PROGRAM` and import the .raw.zst file"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// Turns the events the address importer produced into calls.
    fn flush(&mut self, site: Option<SiteId>, out: &mut Vec<Record>) {
        for event in self.events.drain(..) {
            let site = if matches!(event, Event::Alloc { .. }) {
                site
            } else {
                None
            };
            out.push(Record::Call(Call {
                event,
                thread: 0,
                time_ns: Some(self.time_ns),
                site,
                reentrant: false,
                mallocx_flags: 0,
            }));
        }
    }
}

/// Reads a heaptrack raw file (zstd-compressed or not) and pushes its records, in order, into
/// `sink`; returns what it read.
pub fn import_heaptrack<R: Read>(
    input: R,
    name: &str,
    mut sink: impl FnMut(&Record) -> Result<(), TraceError>,
) -> Result<HeaptrackSummary, TraceError> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let head = input.fill_buf().map_err(|e| TraceError::io(name, e))?;
    let zstd_magic = [0x28, 0xb5, 0x2f, 0xfd];
    let reader: Box<dyn BufRead> = if head.starts_with(&zstd_magic) {
        let decoder =
            ruzstd::decoding::StreamingDecoder::new(input).map_err(|e| TraceError::Input {
                file: name.to_string(),
                what: format!("not a readable zstd stream: {e}"),
            })?;
        Box::new(BufReader::with_capacity(1 << 16, decoder))
    } else {
        Box::new(input)
    };
    let mut im = Importer {
        name: name.to_string(),
        line_no: 0,
        modules: Vec::new(),
        nodes: Vec::new(),
        sites: HashMap::new(),
        addresses: AddressImporter::new(),
        time_ns: 0,
        exe: "x".into(),
        summary: HeaptrackSummary::default(),
        events: Vec::new(),
    };
    let mut out = Vec::new();
    let mut saw_version = false;
    for line in reader.lines() {
        let line = line.map_err(|e| TraceError::io(name, e))?;
        im.line_no += 1;
        if im.line_no == 1 {
            saw_version = line.starts_with("v ");
        }
        im.line(&line, &mut out)?;
        for record in out.drain(..) {
            sink(&record)?;
        }
    }
    if !saw_version {
        return Err(TraceError::Input {
            file: name.to_string(),
            what: "not heaptrack output (it does not start with a 'v' line)".into(),
        });
    }
    im.summary.lines = im.line_no;
    im.summary.issues = im.addresses.issues;
    Ok(im.summary)
}
