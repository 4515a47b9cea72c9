//! `A..=B:STEP` ranges of byte sizes, checked.

use anyhow::{bail, Context, Result};
use std::str::FromStr;

/// The largest value size a sweep accepts (1 GiB): anything larger is a typo.
pub const MAX_VALUE_SIZE: u64 = 1 << 30;

/// An inclusive range of sizes with a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeRange {
    pub start: u64,
    pub end: u64,
    pub step: u64,
}

impl SizeRange {
    pub fn new(start: u64, end: u64, step: u64) -> Result<Self> {
        if start == 0 {
            bail!("bad size range: start 0 (sizes must be at least 1 byte)");
        }
        if step == 0 {
            bail!("bad size range: step 0");
        }
        if end < start {
            bail!("bad size range: {start}..={end} is inverted (end below start)");
        }
        if end > MAX_VALUE_SIZE {
            bail!("bad size range: end {end} is larger than {MAX_VALUE_SIZE} bytes");
        }
        Ok(SizeRange { start, end, step })
    }

    pub fn values(&self) -> impl Iterator<Item = u64> {
        (self.start..=self.end).step_by(self.step as usize)
    }
}

impl FromStr for SizeRange {
    type Err = anyhow::Error;

    /// `A..=B:STEP`, `A..=B` (step 1) or `N` (one size).
    fn from_str(text: &str) -> Result<Self> {
        let number = |s: &str| {
            s.trim()
                .parse::<u64>()
                .with_context(|| format!("bad size range '{text}': '{s}' is not a whole number"))
        };
        let (range, step) = match text.split_once(':') {
            Some((range, step)) => (range, number(step)?),
            None => (text, 1),
        };
        let (start, end) = match range.split_once("..=") {
            Some((a, b)) => (number(a)?, number(b)?),
            None if range.contains("..") => {
                bail!("bad size range '{text}': write an inclusive range as A..=B:STEP")
            }
            None => {
                let n = number(range)?;
                (n, n)
            }
        };
        SizeRange::new(start, end, step)
            .with_context(|| format!("bad size range '{text}'"))
            .map_err(|e| anyhow::anyhow!("{}", e.root_cause()))
    }
}
