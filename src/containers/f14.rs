//! folly's F14 maps and sets, request for request: today's F14Vector/Value/Node and the
//! 2018 F14Vector before and after commit ff9d6fee ("use a single malloc/free call for
//! F14VectorMap and Set").
//!
//! Today's rules cite `folly/container/detail/F14Table.h` and `F14Policy.h` at folly's
//! current main (snapshot ff98381ea); the 2018 rules cite the same files at ff9d6fee and at
//! its parent 3c509ce1. All allocations go through `std::allocator`, i.e. `operator new`
//! (`folly/Memory.h`, `rawOverAlignedImpl`: plain `operator new(n)` up to 16-byte alignment,
//! `aligned_malloc` = `memalign` above it), so a request up to 16-byte alignment is traced
//! with alignment 0 (the allocator's default).

use super::core::{round_up, ArrayPart, Container, ElementType, Tracer, TwoArrays};
use crate::layout::{F14Vector, SplitOrUnified};
use crate::trace::ObjectId;

/// `alignof(max_align_t)` on x86-64, and F14's SIMD tag-vector alignment
/// (`kRequiredVectorAlignment`).
const VECTOR_ALIGN: u64 = 16;

/// The alignment argument of a C++ `std::allocator` request: 0 (plain `operator new`) unless
/// the type is over-aligned.
pub(crate) fn cpp_new_align(align: u64) -> u64 {
    if align > VECTOR_ALIGN {
        align
    } else {
        0
    }
}

/// Where items live in today's F14.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum F14Policy {
    /// `VectorContainerPolicy`: chunks hold 4-byte indices into one values array placed
    /// after the chunks in the same allocation.
    Vector,
    /// `ValueContainerPolicy`: values stored in the chunks.
    Value,
    /// `NodeContainerPolicy`: chunks hold pointers to one allocation per value.
    Node,
}

/// The chunk geometry for an item type (`F14Table.h`, `struct F14Chunk`).
#[derive(Clone, Copy, Debug)]
struct ChunkGeometry {
    item: ElementType,
    /// `kCapacity`: 12 for 4-byte items, else 14.
    capacity: u64,
    /// `kDesiredCapacity = kCapacity - 2`: items per chunk in a multi-chunk table.
    desired: u64,
    /// `kRequiredChunkAlignment = max(kRequiredVectorAlignment, alignof(Item))`, also
    /// `kItemsOffset`, the header's size.
    align: u64,
    /// `kChunkStride = align_ceil(kItemsOffset + kAllocatedCapacity * sizeof(Item), align)`,
    /// `kAllocatedCapacity = kCapacity + (sizeof(Item) == 16)`.
    stride: u64,
}

impl ChunkGeometry {
    fn new(item: ElementType) -> Self {
        let capacity = if item.size == 4 { 12 } else { 14 };
        let allocated = capacity + u64::from(item.size == 16);
        let align = VECTOR_ALIGN.max(item.align);
        ChunkGeometry {
            item,
            capacity,
            desired: capacity - 2,
            align,
            stride: round_up(align + allocated * item.size, align),
        }
    }

    /// `F14Table::chunkAllocSize`: a single chunk is trimmed to its capacity.
    fn alloc_size(&self, chunks: u64, capacity: u64) -> u64 {
        if chunks == 1 {
            self.align + self.item.size * capacity
        } else {
            self.stride * chunks
        }
    }

    /// `F14Table::reserveForInsertImpl` then `computeChunkCountAndScale(capacity, false,
    /// false)`: grow by at least 1.40625x, a single chunk rounds up to 2, 6 or kCapacity
    /// items, more chunks are a power of two, each holding kDesiredCapacity.
    fn grow(&self, size: u64, capacity: u64) -> (u64, u64) {
        let min_growth = capacity + (capacity >> 2) + (capacity >> 3) + (capacity >> 5);
        let desired = (size + 1).max(min_growth);
        if desired <= self.capacity {
            let cap = match desired {
                0..=2 => 2,
                3..=6 => 6,
                _ => self.capacity,
            };
            (1, cap)
        } else {
            let chunks = ((desired - 1) / self.desired + 1).next_power_of_two();
            (chunks, chunks * self.desired)
        }
    }
}

/// Today's F14 map or set (`F14VectorMap`, `F14ValueMap`, `F14NodeMap` and their sets).
///
/// Growth (`F14Table::reserveForInsert`, `rehashImpl`): when `size() == capacity` the
/// policy's `beforeRehash` allocates the new storage, items move, and `afterRehash` frees
/// the old storage. Between the two, a rehash into more than 256 chunks (from anything but
/// a single chunk into a single chunk) allocates a transient `fullness` byte per chunk
/// (`std::array<uint8_t, 256> stackBuf` otherwise) and frees it before the old storage.
/// An empty table points at a static empty chunk: nothing is allocated until the first
/// insert. `NodeContainerPolicy::makeItem` allocates one value per insert, after the table
/// has grown. Destruction (`clearImpl<true>`) destroys items (freeing nodes), then frees
/// the chunk allocation; the model frees nodes in insertion order (folly walks chunks, an
/// order that depends on the hashes).
pub(crate) struct F14Today {
    policy: F14Policy,
    value: ElementType,
    geometry: ChunkGeometry,
    size: u64,
    chunks: u64,
    capacity: u64,
    table: Option<ObjectId>,
    nodes: Vec<ObjectId>,
}

impl F14Today {
    /// `value` is the `value_type`: `std::pair<const K, V>` for a map, `K` for a set.
    pub fn new(policy: F14Policy, value: ElementType) -> Self {
        let item = match policy {
            // `VectorContainerPolicy`: `Item = InternalSizeType = uint32_t`.
            F14Policy::Vector => ElementType { size: 4, align: 4 },
            F14Policy::Value => value,
            F14Policy::Node => ElementType::POINTER,
        };
        F14Today {
            policy,
            value,
            geometry: ChunkGeometry::new(item),
            size: 0,
            chunks: 1,
            capacity: 0,
            table: None,
            nodes: Vec::new(),
        }
    }

    /// `VectorContainerPolicy::valuesOffset`: the chunks, rounded up to the value's
    /// alignment when it exceeds the 4-byte index's.
    fn values_offset(&self, chunks: u64, capacity: u64) -> u64 {
        let prefix = self.geometry.alloc_size(chunks, capacity);
        if self.value.align > 4 {
            round_up(prefix, self.value.align)
        } else {
            prefix
        }
    }

    /// Bytes and alignment of the table allocation: `VectorContainerPolicy::allocSize` with
    /// `kAllocAlignment = max(chunk alignment, alignof(Value))`, or the chunks alone
    /// (`BasePolicy::beforeRehash`, `kChunkAllocAlignment = alignof(Chunk)`).
    fn table_request(&self, chunks: u64, capacity: u64) -> (u64, u64) {
        match self.policy {
            F14Policy::Vector => (
                self.values_offset(chunks, capacity) + self.value.size * capacity,
                self.geometry.align.max(self.value.align),
            ),
            _ => (
                self.geometry.alloc_size(chunks, capacity),
                self.geometry.align,
            ),
        }
    }
}

/// Whether growing a table of `size` elements from `old_chunks` to `new_chunks` chunks is
/// counted as a transient: a non-empty table, not the one-chunk to one-chunk case, and more
/// than 256 chunks in the new table (both F14 generations apply the same rule).
fn transient_rehash(size: u64, old_chunks: u64, new_chunks: u64) -> bool {
    size > 0 && !(old_chunks == 1 && new_chunks == 1) && new_chunks > 256
}

/// `len` and `capacity` of an F14 model with `size` and `capacity` fields (both
/// generations count the same way).
macro_rules! f14_counts {
    () => {
        fn len(&self) -> u64 {
            self.size
        }
        fn capacity(&self) -> u64 {
            self.capacity
        }
    };
}

impl Container for F14Today {
    f14_counts!();
    fn insert(&mut self, t: &mut Tracer) {
        if self.size == self.capacity {
            let (chunks, capacity) = self.geometry.grow(self.size, self.capacity);
            let (bytes, align) = self.table_request(chunks, capacity);
            let new = t.alloc(bytes, cpp_new_align(align));
            if transient_rehash(self.size, self.chunks, chunks) {
                t.transient(chunks);
            }
            t.replace(&mut self.table, new);
            self.chunks = chunks;
            self.capacity = capacity;
        }
        if self.policy == F14Policy::Node {
            self.nodes
                .push(t.alloc(self.value.size, cpp_new_align(self.value.align)));
        }
        self.size += 1;
    }
    fn destroy(&mut self, t: &mut Tracer) {
        t.free_all(&mut self.nodes);
        t.free_slot(&mut self.table);
        self.size = 0;
        self.chunks = 1;
        self.capacity = 0;
    }
    fn arrays(&self) -> Option<TwoArrays> {
        if self.policy != F14Policy::Vector || self.capacity == 0 {
            return None;
        }
        let (bytes, align) = self.table_request(self.chunks, self.capacity);
        Some(TwoArrays {
            first: ArrayPart {
                name: "chunks",
                bytes: self.geometry.alloc_size(self.chunks, self.capacity),
                align: self.geometry.align,
            },
            second: ArrayPart {
                name: "values",
                bytes: self.value.size * self.capacity,
                align: self.value.align,
            },
            unified_bytes: bytes,
            unified_align: align,
        })
    }
}

/// The 2018 F14VectorMap/Set: chunks of 12 four-byte indices (64 bytes), values apart.
///
/// Growth (`F14Table::reserveForInsert` -> `rehash(size() + 1)` at ff9d6fee and its
/// parent): up to 2 items one chunk of 2, up to `kDesiredCapacity / 2 & ~1 = 4` one chunk of
/// 4, else `nextPowTwo(ceil(n / 10))` chunks of 10 ([`F14Vector::capacity_steps`]).
/// - ff9d6fee (`unified`): `VectorContainerPolicy::beforeRehash` allocates
///   `allocSize(chunkAllocSize, capacity)` bytes with the byte allocator (plain `operator
///   new`, whatever the value's alignment): the chunks (a single chunk trimmed to
///   `16 + 4 * capacity`), rounded up to the value's alignment above 8, then the values, the
///   total rounded up to 16 when the values need no more than 8
///   ([`F14Vector::unified`]). `afterRehash` frees the old allocation.
/// - The parent (`split`): `beforeRehash` allocates the values
///   (`AllocTraits::allocate(a, newCapacity)`), `rehashImpl` then allocates the chunks
///   (`newChunks`, `allocSize` rounding a single chunk to 16 bytes), frees the old chunks
///   (`deleteChunks`) and `afterRehash` the old values. Destruction frees the values
///   (`beforeReset`) before the chunks.
/// - Both allocate and free the transient `fullness` array of `rehashImpl` past 256 chunks.
pub struct F14Vector2018 {
    value: ElementType,
    split: bool,
    size: u64,
    capacity: u64,
    chunks_id: Option<ObjectId>,
    values_id: Option<ObjectId>,
}

impl F14Vector2018 {
    /// `split`: the parent of ff9d6fee (values apart from chunks); else ff9d6fee itself.
    pub fn new(value: ElementType, split: bool) -> Self {
        F14Vector2018 {
            value,
            split,
            size: 0,
            capacity: 0,
            chunks_id: None,
            values_id: None,
        }
    }

    fn table(&self, capacity: u64) -> F14Vector {
        F14Vector {
            value_size: self.value.size,
            value_align: self.value.align,
            capacity,
        }
    }

    /// `F14Table::rehash` of that time for `n` items.
    fn next_capacity(n: u64) -> u64 {
        match n {
            0..=2 => 2,
            3..=4 => 4,
            _ => n.div_ceil(10).next_power_of_two() * 10,
        }
    }
}

impl Container for F14Vector2018 {
    f14_counts!();
    fn insert(&mut self, t: &mut Tracer) {
        if self.size == self.capacity {
            let capacity = Self::next_capacity(self.size + 1);
            let old_chunks = self.table(self.capacity).chunk_count();
            let new_table = self.table(capacity);
            let transient_fullness =
                transient_rehash(self.size, old_chunks, new_table.chunk_count());
            if self.split {
                let layout = new_table.split();
                let values = t.alloc(layout.blocks[1].bytes, cpp_new_align(self.value.align));
                let chunks = t.alloc(layout.blocks[0].bytes, 0);
                if transient_fullness {
                    t.transient(new_table.chunk_count());
                }
                t.replace(&mut self.chunks_id, chunks);
                t.replace(&mut self.values_id, values);
            } else {
                let bytes = new_table.unified().blocks[0].bytes;
                let new = t.alloc(bytes, 0);
                if transient_fullness {
                    t.transient(new_table.chunk_count());
                }
                t.replace(&mut self.chunks_id, new);
            }
            self.capacity = capacity;
        }
        self.size += 1;
    }
    fn destroy(&mut self, t: &mut Tracer) {
        t.free_slot(&mut self.values_id);
        t.free_slot(&mut self.chunks_id);
        self.size = 0;
        self.capacity = 0;
    }
    fn arrays(&self) -> Option<TwoArrays> {
        if self.capacity == 0 {
            return None;
        }
        let table = self.table(self.capacity);
        let split = table.split();
        Some(TwoArrays {
            first: ArrayPart {
                name: "chunks",
                bytes: split.blocks[0].bytes,
                align: VECTOR_ALIGN,
            },
            second: ArrayPart {
                name: "values",
                bytes: split.blocks[1].bytes,
                align: self.value.align,
            },
            unified_bytes: table.unified().blocks[0].bytes,
            unified_align: VECTOR_ALIGN,
        })
    }
}
