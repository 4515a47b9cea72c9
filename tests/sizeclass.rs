//! The size-class model against facts that do not come from our code: jemalloc's
//! documented default table (`man jemalloc`, "Size classes") and hand-counted builds.

use fragsim::sizeclass::{
    AllocatorConfig, ClassKind, ConfigError, JemallocVersion, Preset, SizeClasses,
};
use proptest::prelude::*;

fn classes(config: AllocatorConfig) -> SizeClasses {
    SizeClasses::new(config).unwrap()
}

fn preset(name: &str) -> SizeClasses {
    classes(AllocatorConfig::preset(name).unwrap())
}

#[test]
fn default_build_bins_match_jemalloc_manual() {
    // jemalloc(3), "Size classes" table for 16-byte quantum, 4 KiB pages: tiny 8; quantum-spaced
    // 16..128 by 16; then four per doubling up to 14 KiB.
    let expected: Vec<u64> = vec![
        8, 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896,
        1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288,
        14336,
    ];
    let c = preset("default");
    let bins: Vec<u64> = c.bins().iter().map(|b| b.size).collect();
    assert_eq!(bins, expected);
    assert_eq!(c.bins().len(), 36);
    assert_eq!(c.small_maxclass(), 14336);
    assert_eq!(c.large_minclass(), 16384);
    let large: Vec<u64> = c.large().iter().take(6).map(|b| b.size).collect();
    assert_eq!(large, vec![16384, 20480, 24576, 28672, 32768, 40960]);
}

#[test]
fn default_build_slabs_are_least_common_multiples_of_page_and_class() {
    // Hand-derived: 48 B -> lcm(4096, 48) = 12288 (3 pages, 256 regions); 80 B -> 20480 (5
    // pages, 256); 112 B -> 28672 (7 pages, 256); 8 B -> one page of 512; 14336 -> 28672 (2).
    let c = preset("default");
    let slab = |size: u64| {
        let b = c.class_for(size).unwrap();
        (b.slab_size, b.nregs)
    };
    assert_eq!(slab(8), (4096, 512));
    assert_eq!(slab(48), (12288, 256));
    assert_eq!(slab(80), (20480, 256));
    assert_eq!(slab(112), (28672, 256));
    assert_eq!(slab(14336), (28672, 2));
    for class in c.large() {
        assert_eq!(
            (class.kind, class.slab_size, class.nregs),
            (ClassKind::Large, 0, 0)
        );
    }
}

#[test]
fn page64k_quantum8_build_has_55_bins_largest_229376() {
    let c = classes(AllocatorConfig::new(3, 16, 2).unwrap());
    assert_eq!(c.bins().len(), 55);
    assert_eq!(c.small_maxclass(), 229376);
    assert_eq!(c.large_minclass(), 262144);
    // 8-byte quantum: no tiny classes; 8, 16, 24, 32 then 40...
    let first: Vec<u64> = c.bins().iter().take(6).map(|b| b.size).collect();
    assert_eq!(first, vec![8, 16, 24, 32, 40, 48]);
}

#[test]
fn largest_class_is_seven_eighths_of_the_address_space() {
    // 64-bit: the last group (base 2^62) stops one short: 2^62 + 3 * 2^60.
    let c = preset("default");
    assert_eq!(c.large_maxclass(), (1u64 << 62) + 3 * (1u64 << 60));
    assert_eq!(c.usable_size(c.large_maxclass()), Some(c.large_maxclass()));
    assert_eq!(c.usable_size(c.large_maxclass() + 1), None);
    assert_eq!(c.usable_size(u64::MAX), None);
}

#[test]
fn request_zero_is_served_by_the_smallest_class() {
    // nallocx(0, 0) is 8 in jemalloc 5.x (a zero request is served as one byte).
    assert_eq!(preset("default").usable_size(0), Some(8));
    assert_eq!(preset("quantum8").usable_size(0), Some(8));
}

#[test]
fn hand_worked_lookups() {
    let d = preset("default");
    for (request, usable) in [
        (1, 8),
        (9, 16),
        (17, 32),
        (49, 64),
        (129, 160),
        (544, 640),
        (14337, 16384),
        (16385, 20480),
    ] {
        assert_eq!(d.usable_size(request), Some(usable), "request {request}");
    }
    let q8 = preset("quantum8");
    assert_eq!(q8.usable_size(17), Some(24));
    assert_eq!(q8.usable_size(544), Some(640));
    assert_eq!(q8.usable_size(41), Some(48));
}

#[test]
fn active_bytes_add_a_page_to_large_classes_only_when_cache_oblivious() {
    let d = preset("default");
    assert_eq!(d.active_bytes(100), Some(112));
    assert_eq!(d.active_bytes(16384), Some(16384 + 4096));
    let config = AllocatorConfig {
        cache_oblivious: false,
        ..AllocatorConfig::default()
    };
    assert_eq!(classes(config).active_bytes(16384), Some(16384));
    // 300 regions of 48 B need two 12 KiB slabs (256 regions each).
    assert_eq!(d.active_bytes_for(48, 300), Some(2 * 12288));
}

#[test]
fn impossible_configs_are_errors() {
    for (q, p, g) in [
        (2, 12, 2),
        (9, 12, 2),
        (4, 11, 2),
        (4, 22, 2),
        (4, 12, 0),
        (4, 12, 5),
    ] {
        let err = AllocatorConfig::new(q, p, g).unwrap_err().to_string();
        assert!(err.contains("impossible"), "{q},{p},{g}: {err}");
    }
    assert!(AllocatorConfig::preset("bogus").is_err());
    // Every preset is a valid build, found by its name and aliases, and the error names all.
    let err = AllocatorConfig::preset("bogus").unwrap_err().to_string();
    for preset in Preset::ALL {
        preset.config().validate().unwrap();
        assert_eq!(Preset::from_name(preset.name()), Ok(preset));
        for alias in preset.aliases() {
            assert_eq!(Preset::from_name(alias), Ok(preset));
        }
        assert!(err.contains(preset.name()), "{err}");
    }
    assert_eq!(Preset::from_name("dev"), Ok(Preset::V5_3_1));
    assert_eq!(Preset::V5_3_1.config().version, JemallocVersion::V5_3_1);
    assert!(Preset::V5_3_1.config().large_page_rounding);
}

#[test]
fn builds_with_more_than_256_small_classes_are_rejected() {
    // sc.h: `#if (SC_NBINS > 256) #error "Too many small size classes"`. 16 classes per
    // doubling from 8 B to 2 MiB pages is 303 small classes.
    let err = AllocatorConfig::new(3, 21, 4).unwrap_err();
    assert!(matches!(err, ConfigError::Impossible(_)), "{err}");
    assert!(err.to_string().contains("303 small size classes"), "{err}");
    // The closed form agrees with the derived table for every accepted build, and the
    // default build has jemalloc's 36 bins (also checked against the live allocator).
    assert_eq!(AllocatorConfig::default().small_class_count(), 36);
    let mut accepted = 0;
    for q in 3..=8 {
        for p in 12..=21 {
            for g in 1..=4 {
                let Ok(config) = AllocatorConfig::new(q, p, g) else {
                    assert!(
                        AllocatorConfig {
                            lg_quantum: q,
                            lg_page: p,
                            lg_ngroup: g,
                            ..AllocatorConfig::default()
                        }
                        .small_class_count()
                            > 256
                    );
                    continue;
                };
                accepted += 1;
                assert_eq!(
                    classes(config).bins().len() as u64,
                    config.small_class_count(),
                    "{q},{p},{g}"
                );
            }
        }
    }
    assert!(accepted > 200, "{accepted}");
}

fn configs() -> Vec<SizeClasses> {
    let mut all: Vec<SizeClasses> = ["default", "quantum8", "page16k", "page64k"]
        .iter()
        .map(|n| preset(n))
        .collect();
    all.push(classes(AllocatorConfig::new(4, 12, 1).unwrap()));
    all.push(classes(AllocatorConfig::new(3, 13, 3).unwrap()));
    all.push(classes(AllocatorConfig::new(5, 12, 2).unwrap()));
    all
}

#[test]
fn arithmetic_lookup_agrees_with_table_search_exhaustively_below_4_mib() {
    for c in configs() {
        for r in 0..=(4u64 << 20) {
            assert_eq!(
                c.usable_size(r),
                c.class_for(r).map(|k| k.size),
                "{} request {r}",
                c.config().label()
            );
        }
    }
}

fn request() -> impl Strategy<Value = u64> {
    // Log-uniform: small requests matter as much as huge ones.
    (0u32..62, any::<u64>()).prop_map(|(bits, x)| if bits == 0 { 0 } else { x >> (64 - bits) })
}

proptest! {
    #[test]
    fn usable_size_is_the_least_class_not_below_the_request(i in 0usize..7, r in request()) {
        let c = &configs()[i];
        let usable = c.usable_size(r).unwrap();
        prop_assert!(usable >= r);
        prop_assert!(c.all().iter().any(|k| k.size == usable), "{usable} is not a class");
        prop_assert!(!c.all().iter().any(|k| k.size >= r && k.size < usable));
        prop_assert_eq!(c.usable_size(usable), Some(usable));
        prop_assert!(c.usable_size(r + 1).unwrap() >= usable);
    }
}
