//! Any list of arrays, allocated one block each or packed into one block.

use super::{round_up, Block, Layout, SplitOrUnified};

/// `count` elements of `elem_size` bytes aligned to `align`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Array {
    pub name: String,
    pub elem_size: u64,
    pub count: u64,
    pub align: u64,
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
