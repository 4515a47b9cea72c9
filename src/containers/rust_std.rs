//! Rust's standard containers (rustc 1.95, x86-64), request for request.
//!
//! Rules from the Rust standard library and the hashbrown crate it vendors; every one is
//! checked by `tests/containers_std.rs`, which records the real containers' allocator calls
//! and requires them to equal these models' events.

use super::core::{
    key_sequence, round_up, ArrayPart, Container, ElementType, KeyOrder, Tracer, TwoArrays,
};
use crate::trace::ObjectId;

/// `Vec<T>` (and `VecDeque<T>`, which grows the same `RawVec`) filled by `push`.
///
/// `library/alloc/src/raw_vec`: `RawVecInner::grow_amortized` asks for
/// `max(2 * cap, len + 1, min_non_zero_cap)`, where `min_non_zero_cap` is 8 for 1-byte
/// elements, 4 up to 1 KiB and 1 above; the first buffer is an allocation, every later one a
/// `realloc` (`finish_grow` -> `Allocator::grow`, same alignment). `VecDeque::grow` calls
/// `RawVec::grow_one` when full, so it makes the same requests.
pub struct RustVec {
    elem: ElementType,
    len: u64,
    cap: u64,
    id: Option<ObjectId>,
}

impl RustVec {
    pub fn new(elem: ElementType) -> Self {
        RustVec {
            elem,
            len: 0,
            cap: 0,
            id: None,
        }
    }

    fn min_non_zero_cap(&self) -> u64 {
        match self.elem.size {
            1 => 8,
            2..=1024 => 4,
            _ => 1,
        }
    }
}

impl Container for RustVec {
    fn len(&self) -> u64 {
        self.len
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn insert(&mut self, t: &mut Tracer) {
        if self.len == self.cap {
            let cap = (2 * self.cap)
                .max(self.len + 1)
                .max(self.min_non_zero_cap());
            let bytes = cap * self.elem.size;
            match self.id {
                None => self.id = Some(t.alloc(bytes, self.elem.align)),
                Some(id) => t.realloc(id, bytes),
            }
            self.cap = cap;
        }
        self.len += 1;
    }
    fn destroy(&mut self, t: &mut Tracer) {
        t.free_slot(&mut self.id);
        self.len = 0;
        self.cap = 0;
    }
}

/// SSE2 groups on x86-64 (`hashbrown/src/control/group/sse2.rs`: `Group::WIDTH`).
pub(crate) const HASHBROWN_GROUP_WIDTH: u64 = 16;

/// `HashMap<K, V>` / `HashSet<T>`: hashbrown's `RawTable` of `(K, V)` tuples (or `T`).
///
/// `hashbrown/src/raw.rs`:
/// - `TableLayout::new`: `ctrl_align = max(align_of::<T>(), Group::WIDTH)`;
///   `calculate_layout_for(buckets)`: the buckets, rounded up to `ctrl_align`, then
///   `buckets + Group::WIDTH` control bytes, in one allocation aligned to `ctrl_align`.
/// - `capacity_to_buckets`: below 15 items the capacity is raised to 14 (1-byte
///   elements), 7 (2 or 3 bytes) or 3, then 4, 8 or 16 buckets; otherwise
///   `next_power_of_two(cap * 8 / 7)`.
/// - `bucket_mask_to_capacity`: `buckets - 1` below 8 buckets, else `buckets / 8 * 7`.
/// - `reserve_rehash_inner` -> `resize(max(items + 1, full_capacity + 1))` when full
///   (`prepare_resize` allocates the new table, the old one is freed after the move).
/// - An empty map points at a static control group: no allocation until the first insert.
pub struct Hashbrown {
    elem: ElementType,
    items: u64,
    buckets: u64,
    id: Option<ObjectId>,
}

impl Hashbrown {
    /// A table of `elem` (the `(K, V)` tuple for a map: [`ElementType::rust_tuple`]).
    pub fn new(elem: ElementType) -> Self {
        Hashbrown {
            elem,
            items: 0,
            buckets: 0,
            id: None,
        }
    }

    fn ctrl_align(&self) -> u64 {
        self.elem.align.max(HASHBROWN_GROUP_WIDTH)
    }

    /// Bytes of the allocation for `buckets` buckets.
    pub fn alloc_size(&self, buckets: u64) -> u64 {
        round_up(self.elem.size * buckets, self.ctrl_align()) + buckets + HASHBROWN_GROUP_WIDTH
    }

    fn capacity_to_buckets(&self, cap: u64) -> u64 {
        if cap < 15 {
            let min_cap = match self.elem.size {
                0..=1 => 14,
                2..=3 => 7,
                _ => 3,
            };
            match cap.max(min_cap) {
                c if c < 4 => 4,
                c if c < 8 => 8,
                _ => 16,
            }
        } else {
            (cap * 8 / 7).next_power_of_two()
        }
    }
}

fn bucket_mask_to_capacity(bucket_mask: u64) -> u64 {
    if bucket_mask < 8 {
        bucket_mask
    } else {
        (bucket_mask + 1) / 8 * 7
    }
}

impl Container for Hashbrown {
    fn len(&self) -> u64 {
        self.items
    }
    fn capacity(&self) -> u64 {
        if self.buckets == 0 {
            0
        } else {
            bucket_mask_to_capacity(self.buckets - 1)
        }
    }
    fn insert(&mut self, t: &mut Tracer) {
        let full = self.capacity();
        if self.items == full {
            let buckets = self.capacity_to_buckets((self.items + 1).max(full + 1));
            let id = t.alloc(self.alloc_size(buckets), self.ctrl_align());
            t.replace(&mut self.id, id);
            self.buckets = buckets;
        }
        self.items += 1;
    }
    fn destroy(&mut self, t: &mut Tracer) {
        t.free_slot(&mut self.id);
        self.items = 0;
        self.buckets = 0;
    }
    fn arrays(&self) -> Option<TwoArrays> {
        (self.buckets > 0).then(|| TwoArrays {
            first: ArrayPart {
                name: "control bytes",
                bytes: self.buckets + HASHBROWN_GROUP_WIDTH,
                align: HASHBROWN_GROUP_WIDTH,
            },
            second: ArrayPart {
                name: "buckets",
                bytes: self.buckets * self.elem.size,
                align: self.elem.align,
            },
            unified_bytes: self.alloc_size(self.buckets),
            unified_align: self.ctrl_align(),
        })
    }
}

/// `B` of `library/alloc/src/collections/btree/node.rs`.
const BTREE_B: usize = 6;
/// `CAPACITY = 2 * B - 1` keys per node.
pub(crate) const BTREE_CAPACITY: usize = 2 * BTREE_B - 1;

/// `BTreeMap<K, V>` filled by `insert`, keys in ascending or shuffled order.
///
/// `library/alloc/src/collections/btree/node.rs`:
/// - `LeafNode` holds `parent` (a pointer), `parent_idx` and `len` (`u16` each) and arrays of
///   `CAPACITY` keys and values; it is not `repr(C)`, so rustc orders the fields by
///   alignment and no padding sits between them. `InternalNode` is `repr(C)`: a `LeafNode`
///   followed by `2 * B` edge pointers.
/// - The first insert allocates a leaf (`Root::new`); inserting into a full node splits it
///   at `splitpoint(edge_idx)` (`Handle::insert` / `split`), allocating the new right
///   sibling, then the separator goes up (`insert_recursing`); a full root splits too and
///   `push_internal_level` allocates the new root. Allocations go bottom-up.
/// - Dropping (`IntoIter::drop` -> `deallocating_next` / `deallocating_end`) frees every
///   node after its last key has been visited: a post-order walk, children left to right.
pub struct BTreeModel {
    key: ElementType,
    value: ElementType,
    keys: Option<Vec<u64>>,
    nodes: Vec<BNode>,
    root: Option<usize>,
    len: u64,
}

struct BNode {
    id: ObjectId,
    keys: Vec<u64>,
    /// Empty for a leaf.
    children: Vec<usize>,
}

/// Bytes and alignment of a `LeafNode<K, V>` and of an `InternalNode<K, V>`.
pub(crate) fn btree_node_layouts(key: ElementType, value: ElementType) -> ((u64, u64), (u64, u64)) {
    let align = 8u64.max(key.align).max(value.align);
    let cap = BTREE_CAPACITY as u64;
    let leaf = round_up(8 + 2 + 2 + cap * key.size + cap * value.size, align);
    let internal = round_up(leaf + 8 * 2 * BTREE_B as u64, align);
    ((leaf, align), (internal, align))
}

/// Where a full node splits when a key goes to edge `edge_idx`: the index of the key that
/// moves up, and whether the new key then goes left or right (with its index there).
/// `node.rs`: `splitpoint`.
fn splitpoint(edge_idx: usize) -> (usize, bool, usize) {
    const KV_IDX_CENTER: usize = BTREE_B - 1;
    const EDGE_IDX_LEFT_OF_CENTER: usize = BTREE_B - 1;
    const EDGE_IDX_RIGHT_OF_CENTER: usize = BTREE_B;
    match edge_idx {
        e if e < EDGE_IDX_LEFT_OF_CENTER => (KV_IDX_CENTER - 1, true, e),
        EDGE_IDX_LEFT_OF_CENTER => (KV_IDX_CENTER, true, edge_idx),
        EDGE_IDX_RIGHT_OF_CENTER => (KV_IDX_CENTER, false, 0),
        e => (KV_IDX_CENTER + 1, false, e - (KV_IDX_CENTER + 1 + 1)),
    }
}

impl BTreeModel {
    /// A map that will receive `count` keys in `order`.
    pub fn new(key: ElementType, value: ElementType, count: u64, order: KeyOrder) -> Self {
        let keys = match order {
            KeyOrder::Ascending => None,
            KeyOrder::Random(_) => Some(key_sequence(count, order)),
        };
        BTreeModel {
            key,
            value,
            keys,
            nodes: Vec::new(),
            root: None,
            len: 0,
        }
    }

    fn new_node(&mut self, t: &mut Tracer, internal: bool) -> usize {
        let (leaf, internal_layout) = btree_node_layouts(self.key, self.value);
        let (size, align) = if internal { internal_layout } else { leaf };
        let id = t.alloc(size, align);
        self.nodes.push(BNode {
            id,
            keys: Vec::with_capacity(BTREE_CAPACITY),
            children: Vec::new(),
        });
        self.nodes.len() - 1
    }

    /// Inserts `key` under `node`; returns the separator and new right sibling if it split.
    fn insert_into(&mut self, t: &mut Tracer, node: usize, key: u64) -> Option<(u64, usize)> {
        let edge = self.nodes[node].keys.partition_point(|&k| k < key);
        let (key, right_child) = if self.nodes[node].children.is_empty() {
            (key, None)
        } else {
            let child = self.nodes[node].children[edge];
            let (separator, right) = self.insert_into(t, child, key)?;
            (separator, Some(right))
        };
        self.insert_at(t, node, edge, key, right_child)
    }

    /// Inserts `key` (and the edge to its right, in an internal node) at `edge`.
    fn insert_at(
        &mut self,
        t: &mut Tracer,
        node: usize,
        edge: usize,
        key: u64,
        right_child: Option<usize>,
    ) -> Option<(u64, usize)> {
        if self.nodes[node].keys.len() < BTREE_CAPACITY {
            self.nodes[node].keys.insert(edge, key);
            if let Some(c) = right_child {
                self.nodes[node].children.insert(edge + 1, c);
            }
            return None;
        }
        let (middle, left, idx) = splitpoint(edge);
        let internal = right_child.is_some();
        let new = self.new_node(t, internal);
        let right_keys = self.nodes[node].keys.split_off(middle + 1);
        let separator = self.nodes[node].keys.pop().expect("middle key");
        self.nodes[new].keys = right_keys;
        if internal {
            let right_children = self.nodes[node].children.split_off(middle + 1);
            self.nodes[new].children = right_children;
        }
        let target = if left { node } else { new };
        self.nodes[target].keys.insert(idx, key);
        if let Some(c) = right_child {
            self.nodes[target].children.insert(idx + 1, c);
        }
        Some((separator, new))
    }
}

impl Container for BTreeModel {
    fn len(&self) -> u64 {
        self.len
    }
    fn capacity(&self) -> u64 {
        self.nodes.len() as u64 * BTREE_CAPACITY as u64
    }
    fn insert(&mut self, t: &mut Tracer) {
        let key = match &self.keys {
            Some(keys) => keys[self.len as usize],
            None => self.len,
        };
        let root = match self.root {
            Some(root) => root,
            None => {
                let root = self.new_node(t, false);
                self.root = Some(root);
                root
            }
        };
        if let Some((separator, right)) = self.insert_into(t, root, key) {
            let new_root = self.new_node(t, true);
            self.nodes[new_root].keys.push(separator);
            self.nodes[new_root].children = vec![root, right];
            self.root = Some(new_root);
        }
        self.len += 1;
    }
    fn destroy(&mut self, t: &mut Tracer) {
        // Post-order: a node is freed once all its children are.
        if let Some(root) = self.root.take() {
            let mut stack = vec![(root, 0usize)];
            while let Some((node, next_child)) = stack.pop() {
                if next_child < self.nodes[node].children.len() {
                    stack.push((node, next_child + 1));
                    stack.push((self.nodes[node].children[next_child], 0));
                } else {
                    t.free(self.nodes[node].id);
                }
            }
        }
        self.nodes.clear();
        self.len = 0;
    }
}
