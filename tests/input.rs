//! Bad input is a typed error naming the bad value (the command line prints it on one line).

use fragsim::error::InputError;
use fragsim::experiments::BumpArenaSpec;
use fragsim::experiments::{parse_seed_table, physical_sweep, SizeRange, SweepSpec};
use fragsim::sizeclass::{AllocatorConfig, SizeClasses};

#[test]
fn size_ranges() {
    let parse = |s: &str| s.parse::<SizeRange>().unwrap_err();
    assert_eq!(parse("0..=8"), InputError::RangeStartZero);
    assert_eq!(parse("8..=16:0"), InputError::RangeStepZero);
    assert_eq!(
        parse("16..=8"),
        InputError::RangeInverted { start: 16, end: 8 }
    );
    assert!(matches!(
        parse("8..=4294967296"),
        InputError::RangeTooLarge {
            end: 4294967296,
            ..
        }
    ));
    assert!(matches!(parse("8..=x"), InputError::RangeNotANumber { part, .. } if part == "x"));
    assert!(matches!(
        parse("8..16"),
        InputError::RangeNotInclusive { .. }
    ));
    // The message names the bad value, without the range's own text lost on the way.
    assert_eq!(parse("8..=16:0").to_string(), "bad size range: step 0");
    assert_eq!("8..=24:8".parse::<SizeRange>().unwrap().values().count(), 3);
}

#[test]
fn sweeps_and_workloads() {
    let classes = SizeClasses::new(AllocatorConfig::default()).unwrap();
    let spec = |max_capacity, value_align| SweepSpec {
        sizes: SizeRange::new(8, 8, 1).unwrap(),
        max_capacity,
        value_align,
    };
    let sweep = |s| physical_sweep(&classes, &s).unwrap_err();
    assert_eq!(sweep(spec(1, None)), InputError::CapacityTooSmall(1));
    assert!(matches!(
        sweep(spec(1 << 41, None)),
        InputError::CapacityTooLarge { .. }
    ));
    assert_eq!(sweep(spec(10, Some(3))), InputError::BadAlignment(3));
    let workload = |vectors, elements, elem_bytes| {
        BumpArenaSpec {
            vectors,
            elements,
            elem_bytes,
        }
        .validate()
        .unwrap_err()
    };
    assert_eq!(workload(0, 1, 4), InputError::NoVectors);
    assert_eq!(workload(1, 0, 4), InputError::NoElements);
    assert_eq!(workload(1, 1, 3), InputError::BadElementSize(3));
    assert!(matches!(
        workload(u64::MAX, 2, 4),
        InputError::WorkloadTooLarge { .. }
    ));
}

#[test]
fn seed_tables() {
    let err = parse_seed_table("value_size,footprint_change\n48,abc\n", "t.csv").unwrap_err();
    assert!(
        matches!(&err, InputError::MalformedSeedTable { source_name, reason }
            if source_name == "t.csv" && reason.contains("row 2") && reason.contains("abc")),
        "{err}"
    );
    assert!(matches!(
        parse_seed_table("value_size,footprint_change\n", "t.csv"),
        Err(InputError::MalformedSeedTable { .. })
    ));
}
