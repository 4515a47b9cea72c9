//! Any list of arrays, allocated one block each or packed into one block.

use super::{round_up, Block, Layout, SplitOrUnified};
use anyhow::{bail, Context, Result};
use std::str::FromStr;

/// The largest array a layout accepts (1 TiB).
const MAX_ARRAY_BYTES: u64 = 1 << 40;

/// `count` elements of `elem_size` bytes aligned to `align`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Array {
    pub name: String,
    pub elem_size: u64,
    pub count: u64,
    pub align: u64,
}

impl FromStr for Array {
    type Err = anyhow::Error;

    /// `NAME:SIZExCOUNT` or `NAME:SIZExCOUNT:ALIGN`, e.g. `keys:8x1000` or `vals:48x1000:16`.
    /// Without an alignment, the largest power of two dividing the size (at most 8).
    fn from_str(text: &str) -> Result<Self> {
        let bad = |why: &str| {
            anyhow::anyhow!("bad array '{text}': {why} (write NAME:SIZExCOUNT[:ALIGN])")
        };
        let mut parts = text.split(':');
        let name = parts
            .next()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| bad("no name"))?;
        let shape = parts.next().ok_or_else(|| bad("no SIZExCOUNT"))?;
        let (size, count) = shape
            .split_once('x')
            .ok_or_else(|| bad("no 'x' between size and count"))?;
        let number = |s: &str, what: &str| -> Result<u64> {
            s.trim()
                .parse::<u64>()
                .map_err(|_| bad(&format!("{what} '{s}' is not a whole number")))
        };
        let elem_size = number(size, "size")?;
        let count = number(count, "count")?;
        if elem_size == 0 || count == 0 {
            return Err(bad("size and count must be at least 1"));
        }
        let align = match parts.next() {
            Some(a) => number(a, "alignment")?,
            None => super::F14Vector::natural_align(elem_size),
        };
        if parts.next().is_some() {
            return Err(bad("too many ':'"));
        }
        if !align.is_power_of_two() || align > 4096 {
            return Err(bad(&format!(
                "alignment {align} is not a power of two up to 4096"
            )));
        }
        match elem_size.checked_mul(count) {
            Some(total) if total <= MAX_ARRAY_BYTES => {}
            _ => {
                return Err(bad(&format!(
                    "{elem_size} x {count} bytes is more than {MAX_ARRAY_BYTES}"
                )))
            }
        }
        Ok(Array {
            name: name.to_string(),
            elem_size,
            count,
            align,
        })
    }
}

/// Several arrays that one structure owns (e.g. keys, values and metadata of a hash table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArraysLayout {
    pub arrays: Vec<Array>,
}

impl ArraysLayout {
    pub fn new(arrays: Vec<Array>) -> Self {
        ArraysLayout { arrays }
    }

    /// Parses each `NAME:SIZExCOUNT[:ALIGN]`; at least one array.
    pub fn parse(specs: &[String]) -> Result<Self> {
        if specs.is_empty() {
            bail!("no arrays: give at least one --array NAME:SIZExCOUNT[:ALIGN]");
        }
        let arrays = specs
            .iter()
            .map(|s| s.parse::<Array>())
            .collect::<Result<Vec<_>>>()
            .context("bad layout")?;
        Ok(ArraysLayout::new(arrays))
    }
}

impl SplitOrUnified for ArraysLayout {
    fn split(&self) -> Layout {
        Layout::new(
            self.arrays
                .iter()
                .map(|a| Block::new(a.name.clone(), a.elem_size * a.count))
                .collect(),
        )
    }

    /// Arrays in order, each starting at its alignment, the total rounded to the largest one
    /// (as a `#[repr(C)]` struct of arrays would be).
    fn unified(&self) -> Layout {
        let mut end = 0;
        let mut max_align = 1;
        for a in &self.arrays {
            end = round_up(end, a.align) + a.elem_size * a.count;
            max_align = max_align.max(a.align);
        }
        let name = self
            .arrays
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join("+");
        Layout::new(vec![Block::new(name, round_up(end, max_align))])
    }
}
