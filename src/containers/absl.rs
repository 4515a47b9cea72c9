//! abseil's Swiss tables as Debian 12 ships them (20220623, `libabsl-dev`), request for
//! request: `flat_hash_map/set` and `node_hash_map/set` over
//! `absl/container/internal/raw_hash_set.h` (x86-64, SSE2).
//!
//! `scripts/check-cpp-containers.sh` compiles the real tables against a recording
//! `operator new` and compares their requests with these models' events.

use super::core::{round_up, ArrayPart, Container, ElementType, Tracer, TwoArrays};
use super::f14::cpp_new_align;
use crate::trace::ObjectId;

/// `Group::kWidth` with SSE2 (`GroupSse2Impl`).
const GROUP_WIDTH: u64 = 16;

/// `flat_hash_*` (slots hold the values) or `node_hash_*` (slots hold pointers to one
/// allocation per value).
///
/// `raw_hash_set.h`:
/// - Capacities are `2^k - 1`: `rehash_and_grow_if_necessary` calls `resize(1)` on an
///   empty table and `resize(capacity * 2 + 1)` when `prepare_insert` finds
///   `growth_left() == 0` (no tombstones when only inserting).
/// - `CapacityToGrowth(capacity) = capacity - capacity / 8` elements fit before growing.
/// - `initialize_slots` makes one request, `AllocSize(capacity, sizeof(slot),
///   alignof(slot))`: `SlotOffset` = `capacity + 1 + NumClonedBytes()` control bytes
///   (`NumClonedBytes() = Group::kWidth - 1`) rounded up to the slot alignment, then the
///   slots. `Allocate<alignof(slot)>` (`container_memory.h`) asks `std::allocator` for
///   whole `alignof(slot)`-sized units, so the bytes round up to the slot alignment.
/// - `resize` allocates the new array, moves the slots, then frees the old one;
///   `destroy_slots` destroys the elements (node tables free each node) and frees the array.
/// - `node_hash_policy::new_element` allocates each node with `std::allocator<value_type>`
///   after `prepare_insert` (so after any growth). The model frees nodes in insertion order
///   at destruction (abseil walks slots, an order that depends on the hashes).
pub(crate) struct AbslRawHashSet {
    slot: ElementType,
    node: Option<ElementType>,
    size: u64,
    capacity: u64,
    table: Option<ObjectId>,
    nodes: Vec<ObjectId>,
}

impl AbslRawHashSet {
    /// A flat table of `value` (`std::pair<const K, V>` for a map).
    pub fn flat(value: ElementType) -> Self {
        Self::with(value, None)
    }

    /// A node table: slots are pointers, each value its own allocation.
    pub fn node(value: ElementType) -> Self {
        Self::with(ElementType::POINTER, Some(value))
    }

    fn with(slot: ElementType, node: Option<ElementType>) -> Self {
        AbslRawHashSet {
            slot,
            node,
            size: 0,
            capacity: 0,
            table: None,
            nodes: Vec::new(),
        }
    }

    fn control_bytes(capacity: u64) -> u64 {
        capacity + 1 + (GROUP_WIDTH - 1)
    }

    /// Bytes `Allocate<alignof(slot)>` requests for a table of `capacity`.
    pub fn alloc_size(&self, capacity: u64) -> u64 {
        let slot_offset = round_up(Self::control_bytes(capacity), self.slot.align);
        round_up(slot_offset + capacity * self.slot.size, self.slot.align)
    }

    fn growth(capacity: u64) -> u64 {
        capacity - capacity / 8
    }
}

impl Container for AbslRawHashSet {
    fn len(&self) -> u64 {
        self.size
    }
    fn capacity(&self) -> u64 {
        if self.capacity == 0 {
            0
        } else {
            Self::growth(self.capacity)
        }
    }
    fn insert(&mut self, t: &mut Tracer) {
        if self.size == self.capacity() {
            let capacity = if self.capacity == 0 {
                1
            } else {
                self.capacity * 2 + 1
            };
            let id = t.alloc(self.alloc_size(capacity), cpp_new_align(self.slot.align));
            t.replace(&mut self.table, id);
            self.capacity = capacity;
        }
        if let Some(node) = self.node {
            self.nodes
                .push(t.alloc(node.size, cpp_new_align(node.align)));
        }
        self.size += 1;
    }
    fn destroy(&mut self, t: &mut Tracer) {
        t.free_all(&mut self.nodes);
        t.free_slot(&mut self.table);
        self.size = 0;
        self.capacity = 0;
    }
    fn arrays(&self) -> Option<TwoArrays> {
        (self.capacity > 0).then(|| TwoArrays {
            first: ArrayPart {
                name: "control bytes",
                bytes: Self::control_bytes(self.capacity),
                align: 1,
            },
            second: ArrayPart {
                name: "slots",
                bytes: self.capacity * self.slot.size,
                align: self.slot.align,
            },
            unified_bytes: self.alloc_size(self.capacity),
            unified_align: self.slot.align,
        })
    }
}
