//! Return addresses -> frames: the module (from the image's `/proc/self/maps`) and the offset
//! in its file, the form `module+0xOFFSET` of the trace's site table.

use crate::trace::Frame;

/// A file-backed mapping of the image.
#[derive(Clone, Debug)]
struct Mapping {
    start: u64,
    end: u64,
    file_offset: u64,
    path: String,
}

/// The image's mappings, sorted by start address.
#[derive(Clone, Debug, Default)]
pub(crate) struct Modules {
    maps: Vec<Mapping>,
}

impl Modules {
    /// Parses `/proc/PID/maps` text (`start-end perms offset dev inode path`).
    pub fn parse(text: &str) -> Modules {
        let mut maps: Vec<Mapping> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let range = parts.next()?;
                let _perms = parts.next()?;
                let offset = u64::from_str_radix(parts.next()?, 16).ok()?;
                let _dev = parts.next()?;
                let _inode = parts.next()?;
                let path: Vec<&str> = parts.collect();
                let path = path.join(" ");
                if path.is_empty() {
                    return None;
                }
                let (start, end) = range.split_once('-')?;
                Some(Mapping {
                    start: u64::from_str_radix(start, 16).ok()?,
                    end: u64::from_str_radix(end, 16).ok()?,
                    file_offset: offset,
                    path,
                })
            })
            .collect();
        maps.sort_by_key(|m| m.start);
        Modules { maps }
    }

    /// The frame of return address `ip` (looked up at `ip - 1`, inside the call instruction);
    /// `None` for the recorder's own frames.
    pub fn frame(&self, ip: u64) -> Option<Frame> {
        let at = ip.saturating_sub(1);
        let i = self.maps.partition_point(|m| m.start <= at);
        let found = i
            .checked_sub(1)
            .map(|i| &self.maps[i])
            .filter(|m| at < m.end);
        match found {
            Some(m) if m.path.contains("libfragsim_preload") => None,
            Some(m) => Some(Frame::Location {
                module: m.path.replace([';', ' '], "_"),
                offset: at - m.start + m.file_offset,
            }),
            None => Some(Frame::Symbol(format!("{at:#x}"))),
        }
    }
}

/// A module's function symbols (from `.symtab` and `.dynsym`) and its loadable segments.
struct Elf {
    /// (file offset, virtual address, size in the file) of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
    /// (address, size, name), sorted by address.
    functions: Vec<(u64, u64, String)>,
    /// Neither a `.symtab` nor a separate debug file: only the exported functions are named.
    stripped: bool,
}

impl Elf {
    /// The module at `path`, its function symbols completed from a separate debug file
    /// when it has no `.symtab` of its own (a stripped binary: Debian's packages ship theirs
    /// in `-dbgsym` packages, found by build id, or beside the binary by `.gnu_debuglink`).
    fn read(path: &str) -> Option<Elf> {
        use object::{Object, ObjectSegment};
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let segments = file
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                (offset, s.address(), size)
            })
            .collect();
        let mut functions = functions_of(&file);
        let mut stripped = file.section_by_name(".symtab").is_none();
        // Not the system's runtime: its frames are left out of shortened stacks by module,
        // and its names would differ between machines with and without its debug package.
        if stripped && !crate::trace::is_system_module(path) {
            let debug = debug_file(path, &file).and_then(|d| std::fs::read(d).ok());
            let parsed = debug.as_deref().and_then(|d| object::File::parse(d).ok());
            if let Some(d) = parsed.filter(|d| same_build(&file, d)) {
                functions.extend(functions_of(&d));
                stripped = false;
            }
        }
        functions.sort();
        functions.dedup_by_key(|f| f.0);
        Some(Elf {
            segments,
            functions,
            stripped,
        })
    }

    /// The function around `file_offset` and the offset into it.
    fn function_at(&self, file_offset: u64) -> Option<(&str, u64)> {
        let &(off, vaddr, _) = self
            .segments
            .iter()
            .find(|&&(off, _, size)| file_offset >= off && file_offset < off + size)?;
        let addr = vaddr + (file_offset - off);
        let i = self
            .functions
            .partition_point(|f| f.0 <= addr)
            .checked_sub(1)?;
        let (start, size, name) = &self.functions[i];
        (addr < start + size).then_some((name.as_str(), addr - start))
    }
}

/// (address, size, name) of a module's functions, from `.symtab` and `.dynsym`.
fn functions_of(file: &object::File) -> Vec<(u64, u64, String)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.address() > 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .filter(|(_, _, name)| !name.is_empty())
        .collect()
}

/// Where the debugger looks for a module's separate debug file (gdb's order): by build id
/// under `/usr/lib/debug/.build-id/`, then by `.gnu_debuglink`'s name beside the module, in
/// its `.debug/` folder, and under `/usr/lib/debug/` + the module's folder.
fn debug_file(path: &str, file: &object::File) -> Option<std::path::PathBuf> {
    use object::Object;
    use std::path::{Path, PathBuf};
    let root = Path::new("/usr/lib/debug");
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(Some(id)) = file.build_id() {
        if id.len() > 1 {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            candidates.push(root.join(format!(".build-id/{}/{}.debug", &hex[..2], &hex[2..])));
        }
    }
    if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
        let name = String::from_utf8_lossy(name).into_owned();
        let dir = Path::new(path).parent().unwrap_or(Path::new("/"));
        candidates.push(dir.join(&name));
        candidates.push(dir.join(".debug").join(&name));
        candidates.push(root.join(dir.strip_prefix("/").unwrap_or(dir)).join(&name));
    }
    candidates
        .into_iter()
        .find(|c| c.is_file() && c != Path::new(path))
}

/// Whether `debug` is the debug file of `file`: the same build id where both have one.
fn same_build(file: &object::File, debug: &object::File) -> bool {
    use object::Object;
    match (file.build_id(), debug.build_id()) {
        (Ok(Some(a)), Ok(Some(b))) => a == b,
        _ => true,
    }
}

/// Names frames by the function around them (`function+0xOFFSET`), reading each module's ELF file once (after the
/// run: the files must still be there). A frame without a symbol stays `module+0xOFFSET`.
#[derive(Default)]
pub(crate) struct Symbolizer {
    modules: std::collections::HashMap<String, Option<Elf>>,
    /// Frames of stripped modules (not the system's runtime) left `module+0xOFFSET`, by
    /// module.
    unnamed: std::collections::BTreeMap<String, u64>,
}

impl Symbolizer {
    pub fn name(&mut self, frame: Frame) -> Frame {
        let Frame::Location { module, offset } = &frame else {
            return frame;
        };
        let elf = self
            .modules
            .entry(module.clone())
            .or_insert_with(|| Elf::read(module));
        match elf.as_ref().and_then(|e| e.function_at(*offset)) {
            // `name+0xOFFSET` into the function: two calls in one function stay two sites.
            // (`;` separates frames: such a name is left as the location.)
            Some((name, into)) if !name.contains(';') && !name.contains("+0x") => {
                Frame::Symbol(format!("{name}+{into:#x}"))
            }
            _ => {
                // The runtime's unnamed frames are not the program's: no hint for them.
                if elf.as_ref().is_some_and(|e| e.stripped)
                    && !crate::trace::is_system_module(module)
                {
                    *self.unnamed.entry(module.clone()).or_default() += 1;
                }
                frame
            }
        }
    }

    /// The stripped modules (no symbols, no debug file found) some of whose frames have no
    /// name, with how many (distinct frames), the most first.
    pub fn unnamed(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self.unnamed.iter().map(|(m, n)| (m.clone(), *n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }
}
