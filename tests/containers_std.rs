//! The Rust std container models against the real containers: a recording allocator logs
//! every call `Vec`, `VecDeque`, `HashMap`, `HashSet` and `BTreeMap` make while growing from
//! empty to N elements and being dropped, and the log must equal the model's events, event
//! for event, for every listed element size and alignment.
//!
//! This binary does not link the fragsim library (which installs jemalloc as the global
//! allocator for everything linking it): it compiles the model sources themselves and
//! installs its own recording allocator over the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::Mutex;

/// The trace event type, as `src/trace/mod.rs` defines it (the models emit it).
#[allow(dead_code)]
mod trace {
    pub use super::trace_ids::IdPool;
    pub type ObjectId = u32;
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Event {
        Alloc { id: ObjectId, size: u64, align: u64 },
        Free { id: ObjectId },
        Realloc { id: ObjectId, size: u64 },
    }
}

/// The id pool, as `src/trace/ids.rs` defines it (the models' tracer hands out its ids).
#[path = "../src/trace/ids.rs"]
#[allow(dead_code)] // the containers use the id pool only
mod trace_ids;
use trace::ObjectId;

#[path = "../src/containers"]
#[allow(dead_code)]
mod containers {
    pub mod core;
    pub mod rust_std;
}

use containers::core::{key_sequence, Container, ElementType, KeyOrder, Tracer};
use containers::rust_std::{BTreeModel, Hashbrown, RustVec};
use trace::Event;

#[derive(Clone, Copy, Debug)]
enum Raw {
    Alloc {
        ptr: usize,
        size: usize,
        align: usize,
    },
    Free {
        ptr: usize,
    },
    Realloc {
        old: usize,
        new: usize,
        size: usize,
    },
}

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}
static LOG: Mutex<Vec<Raw>> = Mutex::new(Vec::new());

/// Logs the calls of the thread that is recording; the logging itself is not logged.
struct Recorder;

fn log(raw: Raw) {
    let on = RECORDING.try_with(|r| r.replace(false)).unwrap_or(false);
    if on {
        LOG.lock().unwrap().push(raw);
        RECORDING.with(|r| r.set(true));
    }
}

unsafe impl GlobalAlloc for Recorder {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        log(Raw::Alloc {
            ptr: p as usize,
            size: layout.size(),
            align: layout.align(),
        });
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        log(Raw::Free { ptr: ptr as usize });
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        log(Raw::Realloc {
            old: ptr as usize,
            new: p as usize,
            size: new_size,
        });
        p
    }
}

#[global_allocator]
static GLOBAL: Recorder = Recorder;

/// Runs `f` with this thread's allocator calls recorded; returns them as trace events
/// (ids recycled lowest-first, as the models hand them out).
fn record(f: impl FnOnce()) -> Vec<Event> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    {
        let mut log = LOG.lock().unwrap();
        log.clear();
        log.reserve(1 << 16);
    }
    RECORDING.with(|r| r.set(true));
    f();
    RECORDING.with(|r| r.set(false));
    let raw = std::mem::take(&mut *LOG.lock().unwrap());
    let mut ids: HashMap<usize, u32> = HashMap::new();
    let mut free: BinaryHeap<std::cmp::Reverse<u32>> = BinaryHeap::new();
    let mut next = 0u32;
    raw.into_iter()
        .map(|r| match r {
            Raw::Alloc { ptr, size, align } => {
                let id = free.pop().map(|r| r.0).unwrap_or_else(|| {
                    next += 1;
                    next - 1
                });
                ids.insert(ptr, id);
                Event::Alloc {
                    id,
                    size: size as u64,
                    align: align as u64,
                }
            }
            Raw::Free { ptr } => {
                let id = ids.remove(&ptr).expect("free of an unrecorded pointer");
                free.push(std::cmp::Reverse(id));
                Event::Free { id }
            }
            Raw::Realloc { old, new, size } => {
                let id = ids.remove(&old).expect("realloc of an unrecorded pointer");
                ids.insert(new, id);
                Event::Realloc {
                    id,
                    size: size as u64,
                }
            }
        })
        .collect()
}

/// The model's events for `count` inserts and the drop.
fn model(mut c: impl Container, count: u64) -> Vec<Event> {
    let mut events = Vec::new();
    let mut sink = |e: Event| events.push(e);
    let mut t = Tracer::new(&mut sink);
    for _ in 0..count {
        c.insert(&mut t);
    }
    c.destroy(&mut t);
    events
}

fn assert_same(what: &str, real: &[Event], modelled: &[Event]) {
    if let Some(i) = (0..real.len().max(modelled.len())).find(|&i| real.get(i) != modelled.get(i)) {
        panic!(
            "{what}: first difference at event {i}: real {:?}, model {:?} ({} real events, {} modelled)",
            real.get(i),
            modelled.get(i),
            real.len(),
            modelled.len()
        );
    }
    assert!(!real.is_empty(), "{what}: nothing was recorded");
}

macro_rules! aligned_types {
    ($($name:ident = $align:literal),*) => {$(
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        #[repr(C, align($align))]
        struct $name<const S: usize>([u8; S]);
        impl<const S: usize> Blob for $name<S> {
            fn make(i: u64) -> Self {
                let mut b = [0u8; S];
                let be = i.to_be_bytes();
                // Big-endian in the leading bytes: byte order is numeric order.
                if S >= 8 {
                    b[..8].copy_from_slice(&be);
                } else {
                    b.copy_from_slice(&be[8 - S..]);
                }
                $name(b)
            }
        }
    )*};
}

trait Blob: Sized + Copy + Eq + std::hash::Hash + Ord {
    fn make(i: u64) -> Self;
}

aligned_types!(A1 = 1, A2 = 2, A4 = 4, A8 = 8, A16 = 16, A32 = 32);

/// Calls `$m!(prefix.. TYPE, SIZE, ALIGN)` for every tested element type: sizes 1, 2, 3, 4,
/// 8, 16, 24, 48, 100, 256 bytes with alignments from 1 to 32.
macro_rules! each_type {
    ($m:ident ! ($($pre:tt)*)) => {
        $m!($($pre)* A1<1>, 1, 1);
        $m!($($pre)* A2<2>, 2, 2);
        $m!($($pre)* A1<3>, 3, 1);
        $m!($($pre)* A4<4>, 4, 4);
        $m!($($pre)* A1<8>, 8, 1);
        $m!($($pre)* A8<8>, 8, 8);
        $m!($($pre)* A16<16>, 16, 16);
        $m!($($pre)* A8<24>, 24, 8);
        $m!($($pre)* A32<24>, 24, 32);
        $m!($($pre)* A16<48>, 48, 16);
        $m!($($pre)* A4<100>, 100, 4);
        $m!($($pre)* A32<256>, 256, 32);
    };
}

/// A smaller list for the mapped type of maps (keeps the test binary small).
macro_rules! each_value_type {
    ($m:ident ! ($($pre:tt)*)) => {
        $m!($($pre)* A1<1>, 1, 1);
        $m!($($pre)* A1<3>, 3, 1);
        $m!($($pre)* A8<8>, 8, 8);
        $m!($($pre)* A8<24>, 24, 8);
        $m!($($pre)* A4<100>, 100, 4);
        $m!($($pre)* A32<256>, 256, 32);
    };
}

fn elem(size: u64, align: u64) -> ElementType {
    ElementType::new(size, align).unwrap()
}

/// Distinct keys an `S`-byte type can hold, capped at `count`.
fn distinct(size: u64, count: u64) -> u64 {
    if size >= 8 {
        count
    } else {
        count.min(1 << (8 * size))
    }
}

const VEC_COUNT: u64 = 1500;
const MAP_COUNT: u64 = 3000;
const BTREE_COUNT: u64 = 3000;

#[test]
fn vec_matches_the_real_vec() {
    macro_rules! case {
        ($t:ty, $s:expr, $a:expr) => {{
            assert_eq!(std::mem::size_of::<$t>() as u64, elem($s, $a).size);
            let real = record(|| {
                let mut v: Vec<$t> = Vec::new();
                for i in 0..VEC_COUNT {
                    v.push(<$t>::make(i));
                }
                drop(v);
            });
            let m = model(RustVec::new(elem($s, $a)), VEC_COUNT);
            assert_same(&format!("Vec of {}:{}", $s, $a), &real, &m);
        }};
    }
    each_type!(case!());
}

#[test]
fn vecdeque_matches_the_real_vecdeque() {
    macro_rules! case {
        ($t:ty, $s:expr, $a:expr) => {{
            let real = record(|| {
                let mut v: VecDeque<$t> = VecDeque::new();
                for i in 0..VEC_COUNT {
                    v.push_back(<$t>::make(i));
                }
                drop(v);
            });
            let m = model(RustVec::new(elem($s, $a)), VEC_COUNT);
            assert_same(&format!("VecDeque of {}:{}", $s, $a), &real, &m);
        }};
    }
    each_type!(case!());
}

#[test]
fn hashset_matches_the_real_hashset() {
    macro_rules! case {
        ($t:ty, $s:expr, $a:expr) => {{
            let n = distinct($s, MAP_COUNT);
            let keys: Vec<$t> = (0..n).map(<$t>::make).collect();
            let mut set: HashSet<$t> = HashSet::new();
            let real = record(|| {
                for k in &keys {
                    set.insert(*k);
                }
                drop(std::mem::take(&mut set));
            });
            let m = model(Hashbrown::new(elem($s, $a)), n);
            assert_same(&format!("HashSet of {}:{}", $s, $a), &real, &m);
        }};
    }
    each_type!(case!());
}

#[test]
fn hashmap_matches_the_real_hashmap() {
    macro_rules! case {
        ($k:ty, $ks:expr, $ka:expr, $v:ty, $vs:expr, $va:expr) => {{
            let n = distinct($ks, MAP_COUNT);
            let keys: Vec<$k> = (0..n).map(<$k>::make).collect();
            let mut map: HashMap<$k, $v> = HashMap::new();
            let real = record(|| {
                for (i, k) in keys.iter().enumerate() {
                    map.insert(*k, <$v>::make(i as u64));
                }
                drop(std::mem::take(&mut map));
            });
            let tuple = ElementType::rust_tuple(elem($ks, $ka), elem($vs, $va));
            assert_eq!(std::mem::size_of::<($k, $v)>() as u64, tuple.size);
            let m = model(Hashbrown::new(tuple), n);
            assert_same(
                &format!("HashMap of {}:{} to {}:{}", $ks, $ka, $vs, $va),
                &real,
                &m,
            );
        }};
    }
    macro_rules! with_key {
        ($k:ty, $ks:expr, $ka:expr) => {
            each_value_type!(case!($k, $ks, $ka,))
        };
    }
    each_type!(with_key!());
}

fn btree_case<K: Blob, V: Blob>(ks: u64, ka: u64, vs: u64, va: u64, order: KeyOrder) {
    let n = distinct(ks, BTREE_COUNT);
    let keys: Vec<K> = key_sequence(n, order).into_iter().map(K::make).collect();
    let mut map: BTreeMap<K, V> = BTreeMap::new();
    let real = record(|| {
        for (i, k) in keys.iter().enumerate() {
            map.insert(*k, V::make(i as u64));
        }
        drop(std::mem::take(&mut map));
    });
    let m = model(BTreeModel::new(elem(ks, ka), elem(vs, va), n, order), n);
    assert_same(
        &format!("BTreeMap of {ks}:{ka} to {vs}:{va}, {order:?}"),
        &real,
        &m,
    );
}

#[test]
fn btreemap_matches_the_real_btreemap() {
    macro_rules! case {
        ($k:ty, $ks:expr, $ka:expr, $v:ty, $vs:expr, $va:expr) => {{
            for order in [
                KeyOrder::Ascending,
                KeyOrder::Random(7),
                KeyOrder::Random(2026),
            ] {
                btree_case::<$k, $v>($ks, $ka, $vs, $va, order);
            }
        }};
    }
    macro_rules! with_key {
        ($k:ty, $ks:expr, $ka:expr) => {
            each_value_type!(case!($k, $ks, $ka,))
        };
    }
    each_type!(with_key!());
}

#[test]
fn the_recorder_sees_a_plain_box() {
    // The recording itself is checked against a case with a known answer.
    let real = record(|| drop(Box::new([7u64; 5])));
    assert_eq!(
        real,
        vec![
            Event::Alloc {
                id: 0,
                size: 40,
                align: 8
            },
            Event::Free { id: 0 }
        ]
    );
}
