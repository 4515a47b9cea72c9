//! jemalloc's pairing heap (`include/jemalloc/internal/ph.h`), mirrored operation for
//! operation: the same links, the same auxiliary list, the same merges. Which extent a 5.3.1
//! first-fit returns depends on the heap's shape (it enumerates nodes breadth-first), so the
//! shape must be the one jemalloc builds, not just the order.
//!
//! Two releases of `ph.h`: 5.3.1's (commit 10d71315, "Ensure that the root of a heap is always
//! the best element") and 5.3.0's ([`Heap::new_5_3_0`]). In 5.3.0 `ph_remove` of a root with
//! no children promotes the head of the auxiliary list unmerged, so the root need not be the
//! minimum; a later insert that sorts below that root (but above a smaller aux node) takes
//! the root over the aux nodes, and `first` / `remove_first` then return a node that is not
//! the minimum. 5.3.0's bins hand out slabs in that order, so its model must too.

/// No node.
pub(crate) const NIL: u32 = u32::MAX;

/// A node's links (`phn_link_t`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link {
    pub prev: u32,
    pub next: u32,
    pub lchild: u32,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            prev: NIL,
            next: NIL,
            lchild: NIL,
        }
    }
}

/// Where the nodes live: their links and keys. Keys are unique (serial number, address).
pub(crate) trait Nodes {
    fn link(&self, node: u32) -> Link;
    fn link_mut(&mut self, node: u32) -> &mut Link;
    fn key(&self, node: u32) -> (u64, u64);
}

/// One heap (`ph_t`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Heap {
    pub root: u32,
    auxcount: u64,
    /// 5.3.0's `ph.h` rather than 5.3.1's (see the module documentation).
    v5_3_0: bool,
}

impl Default for Heap {
    /// An empty heap with 5.3.1's rules.
    fn default() -> Self {
        Heap {
            root: NIL,
            auxcount: 0,
            v5_3_0: false,
        }
    }
}

fn less<N: Nodes>(n: &N, a: u32, b: u32) -> bool {
    n.key(a) < n.key(b)
}

fn merge_ordered<N: Nodes>(n: &mut N, phn0: u32, phn1: u32) {
    n.link_mut(phn1).prev = phn0;
    let child = n.link(phn0).lchild;
    n.link_mut(phn1).next = child;
    if child != NIL {
        n.link_mut(child).prev = phn1;
    }
    n.link_mut(phn0).lchild = phn1;
}

fn merge<N: Nodes>(n: &mut N, phn0: u32, phn1: u32) -> u32 {
    if phn0 == NIL {
        phn1
    } else if phn1 == NIL {
        phn0
    } else if less(n, phn0, phn1) {
        merge_ordered(n, phn0, phn1);
        phn0
    } else {
        merge_ordered(n, phn1, phn0);
        phn1
    }
}

fn detach<N: Nodes>(n: &mut N, node: u32) {
    let l = n.link_mut(node);
    l.prev = NIL;
    l.next = NIL;
}

/// `phn_merge_siblings`: pairwise left to right, then folded left to right.
fn merge_siblings<N: Nodes>(n: &mut N, phn: u32) -> u32 {
    let mut phn0 = phn;
    let mut phn1 = n.link(phn0).next;
    if phn1 == NIL {
        return phn0;
    }
    let mut rest = n.link(phn1).next;
    if rest != NIL {
        n.link_mut(rest).prev = NIL;
    }
    detach(n, phn0);
    detach(n, phn1);
    phn0 = merge(n, phn0, phn1);
    let head0 = phn0;
    let mut tail = phn0;
    phn0 = rest;
    while phn0 != NIL {
        phn1 = n.link(phn0).next;
        if phn1 != NIL {
            rest = n.link(phn1).next;
            if rest != NIL {
                n.link_mut(rest).prev = NIL;
            }
            detach(n, phn0);
            detach(n, phn1);
            phn0 = merge(n, phn0, phn1);
            n.link_mut(tail).next = phn0;
            tail = phn0;
            phn0 = rest;
        } else {
            n.link_mut(tail).next = phn0;
            tail = phn0;
            phn0 = NIL;
        }
    }
    phn0 = head0;
    phn1 = n.link(phn0).next;
    if phn1 != NIL {
        loop {
            let head = n.link(phn1).next;
            n.link_mut(phn0).next = NIL;
            n.link_mut(phn1).next = NIL;
            phn0 = merge(n, phn0, phn1);
            if head == NIL {
                break;
            }
            n.link_mut(tail).next = phn0;
            tail = phn0;
            phn0 = head;
            phn1 = n.link(phn0).next;
        }
    }
    phn0
}

fn merge_children<N: Nodes>(n: &mut N, phn: u32) -> u32 {
    let lchild = n.link(phn).lchild;
    if lchild == NIL {
        NIL
    } else {
        merge_siblings(n, lchild)
    }
}

impl Heap {
    /// An empty heap with jemalloc 5.3.0's rules.
    pub(crate) fn new_5_3_0() -> Heap {
        Heap {
            v5_3_0: true,
            ..Heap::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }

    /// `ph_merge_aux`. 5.3.1 knows the root is the minimum (`phn_merge_ordered`); 5.3.0
    /// compares (`phn_merge`), so the merged aux list can take the root.
    fn merge_aux<N: Nodes>(&mut self, n: &mut N) {
        self.auxcount = 0;
        let phn = n.link(self.root).next;
        if phn != NIL {
            detach(n, self.root);
            n.link_mut(phn).prev = NIL;
            let phn = merge_siblings(n, phn);
            if self.v5_3_0 {
                self.root = merge(n, self.root, phn);
            } else {
                merge_ordered(n, self.root, phn);
            }
        }
    }

    /// `ph_first`: the minimum; folds the auxiliary list in (a change of shape).
    // Inlined: a first fit asks every non-empty class's heap, most with no aux list.
    #[inline]
    pub fn first<N: Nodes>(&mut self, n: &mut N) -> u32 {
        if self.root == NIL {
            return NIL;
        }
        if n.link(self.root).next == NIL {
            // What `merge_aux` does with an empty aux list.
            self.auxcount = 0;
        } else {
            self.merge_aux(n);
        }
        self.root
    }

    fn try_aux_merge_pair<N: Nodes>(&mut self, n: &mut N) -> bool {
        let mut phn0 = n.link(self.root).next;
        if phn0 == NIL {
            return true;
        }
        let phn1 = n.link(phn0).next;
        if phn1 == NIL {
            return true;
        }
        let next_phn1 = n.link(phn1).next;
        detach(n, phn0);
        detach(n, phn1);
        phn0 = merge(n, phn0, phn1);
        n.link_mut(phn0).next = next_phn1;
        if next_phn1 != NIL {
            n.link_mut(next_phn1).prev = phn0;
        }
        n.link_mut(self.root).next = phn0;
        n.link_mut(phn0).prev = self.root;
        next_phn1 == NIL
    }

    /// `ph_insert`.
    pub fn insert<N: Nodes>(&mut self, n: &mut N, phn: u32) {
        if self.v5_3_0 {
            return self.insert_5_3_0(n, phn);
        }
        *n.link_mut(phn) = Link::default();
        if self.root == NIL {
            self.root = phn;
            return;
        }
        if !self.push_after_root(n, phn) {
            return;
        }
        self.auxcount += 1;
        self.aux_merges(n, self.auxcount.trailing_zeros());
    }

    /// 5.3.0's `ph_insert`: the aux count is bumped before the push and the merges after it
    /// number `ffs(auxcount - 1)` (5.3.1: `ffs(auxcount)`); an insert into an empty heap
    /// also runs them (on a stale count, with nothing to merge).
    fn insert_5_3_0<N: Nodes>(&mut self, n: &mut N, phn: u32) {
        *n.link_mut(phn) = Link::default();
        if self.root == NIL {
            self.root = phn;
        } else {
            // The count is bumped before the push in 5.3.0; the push does not read it.
            if !self.push_after_root(n, phn) {
                return;
            }
            self.auxcount += 1;
        }
        if self.auxcount > 1 {
            self.aux_merges(n, (self.auxcount - 1).trailing_zeros());
        }
    }

    /// The common part of `ph_insert` on a non-empty heap: `phn` less than the root becomes
    /// the root (the old root its child, the aux list emptied: false); otherwise it goes
    /// onto the aux list right after the root (true).
    #[inline]
    fn push_after_root<N: Nodes>(&mut self, n: &mut N, phn: u32) -> bool {
        if less(n, phn, self.root) {
            n.link_mut(phn).lchild = self.root;
            n.link_mut(self.root).prev = phn;
            self.root = phn;
            self.auxcount = 0;
            return false;
        }
        let root_next = n.link(self.root).next;
        n.link_mut(phn).next = root_next;
        if root_next != NIL {
            n.link_mut(root_next).prev = phn;
        }
        n.link_mut(phn).prev = self.root;
        n.link_mut(self.root).next = phn;
        true
    }

    /// Up to `nmerges` pairwise merges at the front of the aux list (fewer when it runs out).
    #[inline]
    fn aux_merges<N: Nodes>(&mut self, n: &mut N, nmerges: u32) {
        for _ in 0..nmerges {
            if self.try_aux_merge_pair(n) {
                break;
            }
        }
    }

    /// `ph_remove_first`.
    pub(crate) fn remove_first<N: Nodes>(&mut self, n: &mut N) -> u32 {
        if self.root == NIL {
            return NIL;
        }
        self.merge_aux(n);
        let ret = self.root;
        self.root = merge_children(n, ret);
        ret
    }

    /// `ph_remove`.
    pub fn remove<N: Nodes>(&mut self, n: &mut N, phn: u32) {
        if self.root == phn && self.v5_3_0 {
            // 5.3.0: a root without children gives way to the aux list's head, unmerged
            // (the quirk: that head need not be the minimum). Otherwise the aux list is
            // merged first, which may put a smaller node above `phn`.
            if n.link(phn).lchild == NIL {
                self.root = n.link(phn).next;
                if self.root != NIL {
                    n.link_mut(self.root).prev = NIL;
                }
                return;
            }
            self.merge_aux(n);
            if self.root == phn {
                self.root = merge_children(n, phn);
                return;
            }
        } else if self.root == phn {
            self.merge_aux(n);
            self.root = merge_children(n, phn);
            return;
        }
        let prev = n.link(phn).prev;
        let mut next = n.link(phn).next;
        let replace = merge_children(n, phn);
        if replace != NIL {
            n.link_mut(replace).next = next;
            if next != NIL {
                n.link_mut(next).prev = replace;
            }
            next = replace;
        }
        if next != NIL {
            n.link_mut(next).prev = prev;
        }
        debug_assert!(prev != NIL);
        if n.link(prev).lchild == phn {
            n.link_mut(prev).lchild = next;
        } else {
            n.link_mut(prev).next = next;
        }
    }

    /// `ph_enumerate_*`: the first `max_visit` nodes breadth-first (left child, then next),
    /// passed to `visit` in that order.
    pub fn enumerate<N: Nodes>(&self, n: &N, max_visit: usize, mut visit: impl FnMut(u32)) {
        if self.root == NIL {
            return;
        }
        // jemalloc's queue is circular with 32 slots; children pushed on the last visit are
        // never read, so a straight array with room for every push visits the same nodes.
        let mut queue = [NIL; 2 * 32 + 2];
        let (mut front, mut rear) = (0usize, 0usize);
        queue[rear] = self.root;
        rear += 1;
        let mut visited = 0;
        while front < rear {
            visited += 1;
            if visited > max_visit {
                return;
            }
            let node = queue[front];
            front += 1;
            let l = n.link(node);
            if rear + 2 <= queue.len() {
                if l.lchild != NIL {
                    queue[rear] = l.lchild;
                    rear += 1;
                }
                if l.next != NIL {
                    queue[rear] = l.next;
                    rear += 1;
                }
            }
            visit(node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Keys {
        links: Vec<Link>,
        keys: Vec<u64>,
    }

    impl Nodes for Keys {
        fn link(&self, node: u32) -> Link {
            self.links[node as usize]
        }
        fn link_mut(&mut self, node: u32) -> &mut Link {
            &mut self.links[node as usize]
        }
        fn key(&self, node: u32) -> (u64, u64) {
            (0, self.keys[node as usize])
        }
    }

    #[test]
    fn removes_in_key_order_after_mixed_operations() {
        // Keys 0..200 in a scrambled order; remove some from the middle; the rest must come
        // out sorted. (Order is what the bins rely on; shape is checked live.)
        let keys: Vec<u64> = (0..200u64).map(|i| (i * 7919) % 200).collect();
        let mut nodes = Keys {
            links: vec![Link::default(); 200],
            keys: keys.clone(),
        };
        let mut heap = Heap::default();
        for i in 0..200u32 {
            heap.insert(&mut nodes, i);
            if i % 17 == 0 {
                heap.first(&mut nodes);
            }
        }
        let mut removed = [false; 200];
        for i in (0..200u32).step_by(3) {
            heap.remove(&mut nodes, i);
            removed[i as usize] = true;
        }
        let mut expected: Vec<u64> = (0..200).filter(|&i| !removed[i]).map(|i| keys[i]).collect();
        expected.sort();
        let mut got = Vec::new();
        while !heap.is_empty() {
            let first = heap.remove_first(&mut nodes);
            got.push(nodes.keys[first as usize]);
        }
        assert_eq!(got, expected);
    }

    fn drain(heap: &mut Heap, nodes: &mut Keys) -> Vec<u64> {
        let mut got = Vec::new();
        while !heap.is_empty() {
            let first = heap.remove_first(nodes);
            got.push(nodes.keys[first as usize]);
        }
        got
    }

    #[test]
    fn the_5_3_0_heap_hands_out_a_node_above_the_minimum() {
        // Hand-derived from 5.3.0's ph.h: insert 10, 20, 30 (aux list 30 -> 20: with
        // auxcount 1 then 2, `ffs(auxcount - 1)` asks for no merge); remove the childless
        // root 10 (its aux head 30 becomes the root, 20 still in its aux list); insert 25,
        // which sorts below the root 30 and takes the root with 30 and 20 as children. The
        // first node is then 25, not 20. 5.3.1 keeps the root minimal: 20, 25, 30.
        for (heap, expected) in [
            (Heap::new_5_3_0(), vec![25, 20, 30]),
            (Heap::default(), vec![20, 25, 30]),
        ] {
            let mut heap = heap;
            let mut nodes = Keys {
                links: vec![Link::default(); 4],
                keys: vec![10, 20, 30, 25],
            };
            for i in 0..3 {
                heap.insert(&mut nodes, i);
            }
            heap.remove(&mut nodes, 0);
            heap.insert(&mut nodes, 3);
            assert_eq!(drain(&mut heap, &mut nodes), expected);
        }
    }
}
