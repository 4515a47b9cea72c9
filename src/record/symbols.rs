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
pub struct Modules {
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
