//! The batch lookup against the scalar one (itself checked against jemalloc's manual and
//! live nallocx in tests/sizeclass.rs and tests/live.rs): the same answer for every request,
//! exhaustively up to 2^24 and at random over the whole u64 range, for every preset, and for
//! each instruction set the loop is compiled for that this CPU runs.

use fragsim::sizeclass::{AllocatorConfig, LaneWidth, Preset, SizeClasses};
use proptest::prelude::*;

fn preset(name: &str) -> SizeClasses {
    SizeClasses::new(AllocatorConfig::preset(name).unwrap()).unwrap()
}

/// What the batch answers: the scalar lookup with nallocx's 0 past the largest class.
fn scalar(classes: &SizeClasses, request: u64) -> u64 {
    classes.usable_size(request).unwrap_or(0)
}

/// The loops this CPU can run (all three on the x86-64 machines this was written on).
fn widths() -> Vec<LaneWidth> {
    LaneWidth::ALL
        .into_iter()
        .filter(|w| w.available())
        .collect()
}

fn assert_batch_matches_scalar(classes: &SizeClasses, requests: &[u64]) {
    for width in widths() {
        let mut out = vec![u64::MAX; requests.len()];
        classes.usable_sizes_with(width, requests, &mut out);
        for (&request, &answer) in requests.iter().zip(&out) {
            assert_eq!(
                answer,
                scalar(classes, request),
                "request {request} under {}, {width:?} loop",
                classes.config().label()
            );
        }
    }
}

/// Requests near every power of two, near the largest class and at the vector path's limit.
fn edge_requests(classes: &SizeClasses) -> Vec<u64> {
    let mut requests = vec![0, 1, u64::MAX, u64::MAX - 1];
    for shift in 0..64 {
        let p = 1u64 << shift;
        requests.extend([p - 1, p, p + 1, p.wrapping_mul(3) / 2 + 1]);
    }
    for class in classes.all() {
        requests.extend([class.size - 1, class.size, class.size + 1]);
    }
    requests
}

#[test]
fn every_request_to_2_pow_24_matches_scalar_for_every_preset() {
    let requests: Vec<u64> = (0..=1u64 << 24).collect();
    for name in Preset::ALL.map(Preset::name) {
        assert_batch_matches_scalar(&preset(name), &requests);
    }
}

#[test]
fn edges_match_scalar_for_every_preset_and_page_rounding() {
    for name in Preset::ALL.map(Preset::name) {
        for page_rounding in [false, true] {
            let mut config = AllocatorConfig::preset(name).unwrap();
            config.large_page_rounding = page_rounding;
            let classes = SizeClasses::new(config).unwrap();
            let requests = edge_requests(&classes);
            assert_batch_matches_scalar(&classes, &requests);
            // Each request alone too: a chunk (64 requests) holding one huge request takes the
            // scalar path, so the vector path must be seen on these values by themselves.
            for &r in &requests {
                assert_batch_matches_scalar(&classes, &[r; 129]);
            }
        }
    }
}

#[test]
fn hand_checked_answers_default_and_dev() {
    // jemalloc(3) "Size classes", 16-byte quantum, 4 KiB pages: 0 and 1 -> 8, 9 -> 16,
    // 129 -> 160, 14337 -> 16384 (first large class), 16385 -> 20480; the 5.3.1 build
    // rounds large requests to pages: 14337 -> 16384, 16385 -> 20480, 20481 -> 24576,
    // 32769 -> 36864 (a class build gives 40960).
    // 16 times over, so that the requests fill whole chunks (64) and take the vector loop.
    let requests = [0, 1, 9, 129, 14337, 16385, 20481, 32769].repeat(16);
    let default = [8, 8, 16, 160, 16384, 20480, 24576, 40960].repeat(16);
    let dev = [8, 8, 16, 160, 16384, 20480, 24576, 36864].repeat(16);
    for (name, expected) in [("default", default), ("dev", dev)] {
        for width in widths() {
            let mut out = vec![0; requests.len()];
            preset(name).usable_sizes_with(width, &requests, &mut out);
            assert_eq!(out, expected, "{name} {width:?}");
        }
        // Past the largest class: 0, as nallocx answers.
        let mut out = [1];
        preset(name).usable_sizes(&[u64::MAX], &mut out);
        assert_eq!(out, [0]);
    }
}

#[test]
fn iterator_form_gives_the_slice_answers() {
    let classes = preset("dev");
    // An odd length: the iterator refills its buffer several times and ends part-way.
    let requests: Vec<u64> = (0..1000u64).map(|i| i * i * 977 + i).collect();
    let mut expected = vec![0; requests.len()];
    classes.usable_sizes(&requests, &mut expected);
    let iterated: Vec<u64> = classes
        .usable_sizes_iter(requests.iter().copied())
        .collect();
    assert_eq!(iterated, expected);
    assert_eq!(classes.usable_sizes_iter(std::iter::empty()).count(), 0);
}

#[test]
fn usable_sizes_uses_the_widest_loop_this_cpu_runs() {
    let widest = LaneWidth::widest();
    assert!(widest.available());
    let wider_available = LaneWidth::ALL
        .iter()
        .skip_while(|&&w| w != widest)
        .skip(1)
        .any(|w| w.available());
    assert!(!wider_available, "{widest:?}");
    eprintln!("loops checked here: {:?}", widths());
}

#[test]
#[should_panic(expected = "3 requests but 2 answer slots")]
fn mismatched_lengths_panic_with_both_lengths() {
    preset("default").usable_sizes(&[1, 2, 3], &mut [0; 2]);
}

proptest! {
    #[test]
    fn random_requests_match_scalar_for_any_config(
        lg_quantum in 3u32..=8,
        lg_page in 12u32..=21,
        lg_ngroup in 1u32..=4,
        page_rounding: bool,
        // Log-uniform below 2^50, two whole chunks of them (the vector loop), then raw u64s
        // (almost all huge: the scalar fallback).
        small in prop::collection::vec((0u32..=50, any::<u64>()), 128),
        raw in prop::collection::vec(any::<u64>(), 40),
    ) {
        // Builds jemalloc refuses (e.g. more than 256 small classes) are not lookups to check.
        let config = AllocatorConfig::new(lg_quantum, lg_page, lg_ngroup);
        prop_assume!(config.is_ok());
        let mut config = config.unwrap();
        config.large_page_rounding = page_rounding;
        let classes = SizeClasses::new(config).unwrap();
        let requests: Vec<u64> = small
            .iter()
            .map(|&(shift, r)| r >> (14 + shift))
            .chain(raw.iter().copied())
            .collect();
        for width in widths() {
            let mut out = vec![0; requests.len()];
            classes.usable_sizes_with(width, &requests, &mut out);
            for (&request, &answer) in requests.iter().zip(&out) {
                prop_assert_eq!(answer, scalar(&classes, request), "request {} {:?}", request, width);
            }
        }
    }
}
