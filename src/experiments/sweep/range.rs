//! `A..=B:STEP` ranges of byte sizes, checked.

use crate::error::InputError;
use std::str::FromStr;

/// The largest value size a sweep accepts (1 GiB): anything larger is a typo.
pub(crate) const MAX_VALUE_SIZE: u64 = 1 << 30;

/// An inclusive range of sizes with a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeRange {
    pub start: u64,
    pub end: u64,
    pub step: u64,
}

impl SizeRange {
    pub fn new(start: u64, end: u64, step: u64) -> Result<Self, InputError> {
        if start == 0 {
            return Err(InputError::RangeStartZero);
        }
        if step == 0 {
            return Err(InputError::RangeStepZero);
        }
        if end < start {
            return Err(InputError::RangeInverted { start, end });
        }
        if end > MAX_VALUE_SIZE {
            return Err(InputError::RangeTooLarge {
                end,
                max: MAX_VALUE_SIZE,
            });
        }
        Ok(SizeRange { start, end, step })
    }

    /// How many sizes the range holds.
    pub fn count(&self) -> u64 {
        (self.end - self.start) / self.step + 1
    }

    pub fn values(&self) -> impl Iterator<Item = u64> {
        (self.start..=self.end).step_by(self.step as usize)
    }
}

impl FromStr for SizeRange {
    type Err = InputError;

    /// `A..=B:STEP`, `A..=B` (step 1) or `N` (one size).
    fn from_str(text: &str) -> Result<Self, InputError> {
        let number = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| InputError::RangeNotANumber {
                    text: text.to_string(),
                    part: s.to_string(),
                })
        };
        let (range, step) = match text.split_once(':') {
            Some((range, step)) => (range, number(step)?),
            None => (text, 1),
        };
        let (start, end) = match range.split_once("..=") {
            Some((a, b)) => (number(a)?, number(b)?),
            None if range.contains("..") => {
                return Err(InputError::RangeNotInclusive {
                    text: text.to_string(),
                })
            }
            None => {
                let n = number(range)?;
                (n, n)
            }
        };
        SizeRange::new(start, end, step)
    }
}
