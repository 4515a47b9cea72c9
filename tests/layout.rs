//! F14 vector layouts against byte counts worked by hand from folly's F14Table.h and
//! F14Policy.h at commit ff9d6fee (D8485933), and generic array layouts.

use fragsim::layout::{Array, ArraysLayout, F14Vector, SplitOrUnified};
use fragsim::sizeclass::{AllocatorConfig, SizeClasses};

fn default_classes() -> SizeClasses {
    SizeClasses::new(AllocatorConfig::default()).unwrap()
}

fn f14(value_size: u64, capacity: u64) -> F14Vector {
    F14Vector {
        value_size,
        value_align: F14Vector::natural_align(value_size),
        capacity,
    }
}

/// (requested split blocks, requested unified, usable split, usable unified).
fn bytes(t: F14Vector) -> (Vec<u64>, u64, u64, u64) {
    let c = default_classes();
    let split = t.split();
    let unified = t.unified();
    (
        split.blocks.iter().map(|b| b.bytes).collect(),
        unified.requested(),
        split.cost(&c).unwrap().usable,
        unified.cost(&c).unwrap().usable,
    )
}

#[test]
fn capacity_steps() {
    assert_eq!(F14Vector::capacity_steps(100), vec![2, 4, 10, 20, 40, 80]);
    assert_eq!(F14Vector::capacity_steps(3), vec![2]);
}

#[test]
fn f14_vector_set_of_int_with_one_element_allocates_32_bytes() {
    // folly's F14SetTest: after the change, an F14VectorSet<int> with one element makes a
    // single 32-byte allocation (capacity 2: 16 + 4*2 + 4*2 = 32).
    let (_, unified, _, usable) = bytes(f14(4, 2));
    assert_eq!(unified, 32);
    assert_eq!(usable, 32);
}

#[test]
fn hand_worked_48_byte_values() {
    // cap 2:  chunks 16+4*2=24 -> 32; values 96.  unified 24+96=120 -> 128 (class 128).
    assert_eq!(bytes(f14(48, 2)), (vec![32, 96], 128, 32 + 96, 128));
    // cap 4:  chunks 16+16=32; values 192.        unified 224 (class 224).
    assert_eq!(bytes(f14(48, 4)), (vec![32, 192], 224, 32 + 192, 224));
    // cap 10: chunks 56 -> 64; values 480 (class 512). unified 536 -> 544 (class 640).
    assert_eq!(bytes(f14(48, 10)), (vec![64, 480], 544, 64 + 512, 640));
    // cap 20: two chunks 128; values 960 (class 1024). unified 1088 (class 1280).
    assert_eq!(bytes(f14(48, 20)), (vec![128, 960], 1088, 128 + 1024, 1280));
}

#[test]
fn hand_worked_4_byte_values() {
    // cap 2:  chunks 24 -> 32; values 8.   unified 32.
    assert_eq!(bytes(f14(4, 2)), (vec![32, 8], 32, 32 + 8, 32));
    // cap 4:  chunks 32; values 16.        unified 48.
    assert_eq!(bytes(f14(4, 4)), (vec![32, 16], 48, 32 + 16, 48));
    // cap 10: chunks 56 -> 64; values 40 (class 48). unified 96.
    assert_eq!(bytes(f14(4, 10)), (vec![64, 40], 96, 64 + 48, 96));
    // cap 20: chunks 128; values 80.       unified 208 -> class 224.
    assert_eq!(bytes(f14(4, 20)), (vec![128, 80], 208, 128 + 80, 224));
}

#[test]
fn over_aligned_values_round_the_prefix_not_the_total() {
    // alignof 64, 64-byte values, cap 2: prefix 24 -> 64, plus 128 = 192 (not 152 -> 160).
    let t = F14Vector {
        value_size: 64,
        value_align: 64,
        capacity: 2,
    };
    assert_eq!(t.unified().requested(), 192);
    assert_eq!(f14(64, 2).unified().requested(), 160);
}

#[test]
fn split_costs_two_calls_unified_one() {
    let c = default_classes();
    let t = f14(48, 40);
    assert_eq!(t.split().cost(&c).unwrap().calls, 2);
    assert_eq!(t.unified().cost(&c).unwrap().calls, 1);
}

#[test]
fn arrays_layout_aligns_each_array() {
    // 3 bytes of tags then 5 u64: unified 3 -> 8, + 40 = 48.
    let layout = ArraysLayout::new(vec![
        Array {
            name: "tags".into(),
            elem_size: 1,
            count: 3,
            align: 1,
        },
        Array {
            name: "keys".into(),
            elem_size: 8,
            count: 5,
            align: 8,
        },
    ]);
    assert_eq!(layout.split().requested(), 43);
    assert_eq!(layout.unified().requested(), 48);
}
