//! What every container model shares: element types, the event recorder, the trait.
//!
//! This file depends only on [`crate::trace`], so the recording test can compile it (and
//! `rust_std.rs`) into a test binary that installs its own global allocator.

use crate::trace::{Event, IdPool, ObjectId};

/// Largest alignment accepted for an element (a page).
pub(crate) const MAX_ALIGN: u64 = 4096;
/// Largest element size accepted (1 MiB): larger elements are not container elements.
pub(crate) const MAX_ELEMENT: u64 = 1 << 20;

/// A bad element type.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ElementError {
    #[error("'{0}' is not SIZE or SIZE:ALIGN (e.g. 24 or 20:1)")]
    Malformed(String),
    #[error("element size {0} must be between 1 and {MAX_ELEMENT} bytes")]
    Size(u64),
    #[error("alignment {0} must be a power of two no larger than {MAX_ALIGN}")]
    Align(u64),
}

/// A plain type as both languages lay it out: `size` is a multiple of `align`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ElementType {
    pub size: u64,
    pub align: u64,
}

impl ElementType {
    /// A type of `size` bytes of data aligned to `align`: its size is rounded up to the
    /// alignment, as `sizeof` and `size_of` are.
    pub fn new(size: u64, align: u64) -> Result<Self, ElementError> {
        if size == 0 || size > MAX_ELEMENT {
            return Err(ElementError::Size(size));
        }
        if !align.is_power_of_two() || align > MAX_ALIGN {
            return Err(ElementError::Align(align));
        }
        Ok(ElementType {
            size: round_up(size, align),
            align,
        })
    }

    /// `SIZE[:ALIGN]`; the alignment defaults to the largest power of two dividing the size,
    /// at most 8 (a struct of that many bytes of scalars).
    pub fn parse(text: &str) -> Result<Self, ElementError> {
        let bad = || ElementError::Malformed(text.to_string());
        let (size, align) = match text.split_once(':') {
            Some((s, a)) => (
                s.trim().parse::<u64>().map_err(|_| bad())?,
                Some(a.trim().parse::<u64>().map_err(|_| bad())?),
            ),
            None => (text.trim().parse::<u64>().map_err(|_| bad())?, None),
        };
        let align = align.unwrap_or_else(|| natural_align(size));
        Self::new(size, align)
    }

    /// A pointer on a 64-bit target.
    pub(crate) const POINTER: ElementType = ElementType { size: 8, align: 8 };

    /// Rust's `(A, B)`: rustc orders fields by decreasing alignment, so no padding sits
    /// between them when each size is a multiple of its alignment (checked by the recording
    /// tests, which use real tuples).
    pub fn rust_tuple(a: ElementType, b: ElementType) -> ElementType {
        let align = a.align.max(b.align);
        ElementType {
            size: round_up(a.size + b.size, align),
            align,
        }
    }

    /// C++'s `std::pair<const A, B>`: members in declaration order, `second` at the next
    /// multiple of its alignment.
    pub fn cpp_pair(a: ElementType, b: ElementType) -> ElementType {
        let align = a.align.max(b.align);
        ElementType {
            size: round_up(round_up(a.size, b.align) + b.size, align),
            align,
        }
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.size, self.align)
    }
}

/// The largest power of two dividing `size`, at most 8.
pub fn natural_align(size: u64) -> u64 {
    (1u64 << size.trailing_zeros().min(3)).max(1)
}

/// Rounds `n` up to a multiple of `align` (a power of two).
pub(crate) fn round_up(n: u64, align: u64) -> u64 {
    (n + align - 1) & !(align - 1)
}

/// Hands out object ids the way a trace does (lowest free id first) and passes each event
/// to a sink.
pub struct Tracer<'a> {
    ids: IdPool,
    sink: &'a mut dyn FnMut(Event),
}

impl<'a> Tracer<'a> {
    pub fn new(sink: &'a mut dyn FnMut(Event)) -> Self {
        Tracer {
            ids: IdPool::new(),
            sink,
        }
    }

    /// An allocation of `size` bytes aligned to `align` (0: the allocator's default).
    pub fn alloc(&mut self, size: u64, align: u64) -> ObjectId {
        let id = self.ids.take().expect("fewer than 2^32 live objects");
        (self.sink)(Event::Alloc { id, size, align });
        id
    }

    pub fn free(&mut self, id: ObjectId) {
        (self.sink)(Event::Free { id });
        self.ids.give_back(id);
    }

    /// Puts `new` into `slot` and frees what it held (a table replaced after a rehash).
    pub fn replace(&mut self, slot: &mut Option<ObjectId>, new: ObjectId) {
        if let Some(old) = slot.replace(new) {
            self.free(old);
        }
    }

    /// Frees what `slot` holds, if anything, and empties it.
    pub(crate) fn free_slot(&mut self, slot: &mut Option<ObjectId>) {
        if let Some(id) = slot.take() {
            self.free(id);
        }
    }

    /// Frees every id in `ids`, in order, and empties it.
    pub(crate) fn free_all(&mut self, ids: &mut Vec<ObjectId>) {
        for id in ids.drain(..) {
            self.free(id);
        }
    }

    /// An allocation freed at once (a rehash's transient scratch array).
    pub fn transient(&mut self, size: u64) {
        let id = self.alloc(size, 0);
        self.free(id);
    }

    pub fn realloc(&mut self, id: ObjectId, size: u64) {
        (self.sink)(Event::Realloc { id, size });
    }
}

/// One of the two arrays a hash table keeps (control bytes or chunks, and the elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ArrayPart {
    pub name: &'static str,
    pub bytes: u64,
    pub align: u64,
}

/// A table with two arrays, as allocated apart (two requests) and together (one request,
/// with the padding the container puts between them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TwoArrays {
    pub first: ArrayPart,
    pub second: ArrayPart,
    /// The single request of the unified layout, and its alignment.
    pub unified_bytes: u64,
    pub unified_align: u64,
}

/// A container model: it replays, request for request, what the real container asks of its
/// allocator while elements are inserted one at a time and when it is destroyed.
pub trait Container {
    /// Elements inserted so far.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Elements the container holds before its next growth (nodes: slots in allocated nodes).
    fn capacity(&self) -> u64;
    /// Inserts one element (a new key), emitting the allocator calls this makes.
    fn insert(&mut self, tracer: &mut Tracer);
    /// Drops the container, emitting its frees.
    fn destroy(&mut self, tracer: &mut Tracer);
    /// The current table's two arrays, for containers that have two.
    fn arrays(&self) -> Option<TwoArrays> {
        None
    }
}

/// The order keys are inserted in (it shapes a B-tree).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOrder {
    Ascending,
    /// A Fisher-Yates shuffle of `0..count` driven by splitmix64 from this seed.
    Random(u64),
}

/// The keys `0..count` in `order` (what a test inserts into the real container).
pub fn key_sequence(count: u64, order: KeyOrder) -> Vec<u64> {
    let mut keys: Vec<u64> = (0..count).collect();
    if let KeyOrder::Random(seed) = order {
        let mut state = seed;
        for i in (1..keys.len()).rev() {
            let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
            keys.swap(i, j);
        }
    }
    keys
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
