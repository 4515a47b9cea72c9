//! The C++ container models against figures derived by hand from folly's and hashbrown's own
//! sources and commit messages, and the `container`/`containers` commands. (The Rust models
//! are checked against the real containers in `containers_std.rs`; abseil against the real
//! library by `scripts/check-cpp-containers.sh`.)

use fragsim::containers::Hashbrown;
use fragsim::containers::{grow, ContainerKind, ContainerSpec, ElementType, KeyOrder, Tracer};
use fragsim::sizeclass::SizeClasses;
use fragsim::trace::{Event, TraceReader};
use std::process::{Command, Output};

fn elem(text: &str) -> ElementType {
    ElementType::parse(text).unwrap()
}

/// The events of `count` inserts (no destruction).
fn events(kind: ContainerKind, key: &str, value: Option<&str>, count: u64) -> Vec<Event> {
    let spec = ContainerSpec::new(kind, elem(key), value.map(elem), KeyOrder::Ascending).unwrap();
    let mut c = spec.build(count);
    let mut out = Vec::new();
    let mut sink = |e: Event| out.push(e);
    let mut t = Tracer::new(&mut sink);
    for _ in 0..count {
        c.insert(&mut t);
    }
    drop(t);
    out
}

fn alloc_sizes(events: &[Event]) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter_map(|e| match *e {
            Event::Alloc { size, align, .. } => Some((size, align)),
            _ => None,
        })
        .collect()
}

#[test]
fn hashbrown_sizes_match_its_own_table() {
    // hashbrown src/raw.rs, `capacity_to_buckets`: "| capacity | buckets | bytes allocated |"
    // for { size: 1, ctrl_align: 16 }: 4 buckets 36 bytes, 8 -> 40, 16 -> 48, 32 -> 80.
    let table = Hashbrown::new(elem("1"));
    let sizes: Vec<u64> = [4, 8, 16, 32].map(|b| table.alloc_size(b)).to_vec();
    assert_eq!(sizes, vec![36, 40, 48, 80]);
}

#[test]
fn f14_vector_2018_unified_is_the_commit_message_formula() {
    // ff9d6fee's message: "The unified allocation of `(64+10*sizeof(value_type))*N`" for N
    // chunks. A map of 8-byte keys and 24-byte values (32-byte pairs) reaches 2 chunks at
    // its 5th element and 4 at its 21st.
    let sizes = alloc_sizes(&events(ContainerKind::F14Vector2018, "8", Some("24"), 21));
    // Single chunk: 16 + 4 * capacity, then the values, rounded up to 16.
    assert_eq!(
        sizes,
        vec![
            ((16 + 4 * 2 + 32 * 2_u64).next_multiple_of(16), 0),
            ((16 + 4 * 4 + 32 * 4_u64).next_multiple_of(16), 0),
            ((16 + 4 * 10 + 32 * 10_u64).next_multiple_of(16), 0),
            ((64 + 10 * 32) * 2, 0),
            ((64 + 10 * 32) * 4, 0),
        ]
    );
}

#[test]
fn f14_vector_2018_split_allocates_values_then_chunks() {
    // The parent of ff9d6fee: beforeRehash allocates the values, then newChunks the chunks;
    // the old chunks are freed before the old values.
    let e = events(ContainerKind::F14Vector2018Split, "8", Some("24"), 3);
    assert_eq!(
        e,
        vec![
            Event::Alloc {
                id: 0,
                size: 64,
                align: 0
            },
            Event::Alloc {
                id: 1,
                size: 32,
                align: 0
            },
            Event::Alloc {
                id: 2,
                size: 128,
                align: 0
            },
            Event::Alloc {
                id: 3,
                size: 32,
                align: 0
            },
            Event::Free { id: 1 },
            Event::Free { id: 0 },
        ]
    );
}

#[test]
fn f14_today_grows_through_2_6_kcapacity_then_chunk_powers() {
    // F14ValueSet<uint64_t>: Item is 8 bytes, so kCapacity 14, kDesiredCapacity 12, chunk
    // header 16 bytes, stride align_ceil(16 + 14 * 8, 16) = 128. Growth by at least
    // 1.40625x: capacities 2, 6, 14, then 2 chunks (24), 4 chunks (48).
    let sizes = alloc_sizes(&events(ContainerKind::F14Value, "8", None, 25));
    assert_eq!(
        sizes,
        vec![
            (16 + 16, 0),
            (16 + 48, 0),
            (16 + 112, 0),
            (256, 0),
            (512, 0)
        ]
    );
    // F14VectorMap<int, int>: 4-byte indices (kCapacity 12), 8-byte pairs after the chunk:
    // first table 16 + 4 * 2 + 8 * 2 = 40 bytes.
    let first = alloc_sizes(&events(ContainerKind::F14Vector, "4", Some("4"), 1));
    assert_eq!(first, vec![(40, 0)]);
    // Over-aligned values: the allocation is aligned to them and the values start at a
    // multiple of their alignment (16 + 4 * 2 = 24 -> 32).
    let aligned = alloc_sizes(&events(ContainerKind::F14Vector, "32:32", None, 1));
    assert_eq!(aligned, vec![(32 + 64, 32)]);
}

#[test]
fn f14_node_allocates_one_node_per_insert_after_the_table() {
    let e = events(ContainerKind::F14Node, "8", Some("24"), 3);
    let sizes = alloc_sizes(&e);
    assert_eq!(
        sizes,
        vec![(16 + 8 * 2, 0), (32, 0), (32, 0), (16 + 8 * 6, 0), (32, 0)]
    );
}

#[test]
fn pair_and_tuple_layouts() {
    // C++ pair<const char[3], uint64_t>: second at 8, size 16. Rust ([u8; 3], u64): the u64
    // first, size 16. With two fields whose sizes are multiples of their alignments the two
    // languages always agree on the size (only the order differs).
    for (k, v, size) in [
        ("3:1", "8", 16),
        ("1", "16:16", 32),
        ("12:4", "8", 24),
        ("20:4", "8", 32),
    ] {
        assert_eq!(
            ElementType::cpp_pair(elem(k), elem(v)).size,
            size,
            "{k} {v}"
        );
        assert_eq!(
            ElementType::rust_tuple(elem(k), elem(v)).size,
            size,
            "{k} {v}"
        );
    }
    // SIZE:ALIGN rounds the size up to the alignment, as sizeof does.
    assert_eq!(elem("20:8"), ElementType { size: 24, align: 8 });
    assert_eq!(elem("20"), ElementType { size: 20, align: 4 });
}

#[test]
fn growth_prices_steps_and_counts_calls() {
    let classes = SizeClasses::new(Default::default()).unwrap();
    let spec =
        ContainerSpec::new(ContainerKind::Vec, elem("8"), None, KeyOrder::Ascending).unwrap();
    let g = grow(&spec, 5, &classes, &[3], &mut |_| {}).unwrap();
    // Vec<u64>: capacity 4 (32 bytes) then realloc to 8 (64 bytes); then the free.
    assert_eq!(g.steps.first().unwrap().capacity, 4);
    assert_eq!(g.last().live.requested, 64);
    assert_eq!(g.calls, 3);
    assert_eq!(g.samples[0].live.requested, 32);
    assert_eq!(g.peak.usable, 64);
}

fn fragsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fragsim"))
        .args(args)
        .output()
        .expect("run fragsim")
}

fn assert_rejected(args: &[&str], names: &str) {
    let out = fragsim(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(
        stderr.contains(names),
        "{args:?} should name {names}: {stderr}"
    );
}

#[test]
fn bad_container_input_exits_2_with_one_line() {
    assert_rejected(
        &["container", "f15", "--key", "8", "--count", "3"],
        "absl-node-hash-set",
    );
    assert_rejected(
        &["container", "hashmap", "--key", "8", "--count", "3"],
        "--value",
    );
    assert_rejected(
        &[
            "container",
            "vec",
            "--key",
            "8",
            "--value",
            "8",
            "--count",
            "3",
        ],
        "only --key",
    );
    assert_rejected(
        &["container", "vec", "--key", "0", "--count", "3"],
        "size 0",
    );
    assert_rejected(
        &["container", "vec", "--key", "8:3", "--count", "3"],
        "alignment 3",
    );
    assert_rejected(
        &["container", "vec", "--key", "8:8192", "--count", "3"],
        "8192",
    );
    assert_rejected(&["container", "vec", "--key", "x", "--count", "3"], "'x'");
    assert_rejected(
        &["container", "vec", "--key", "8", "--count", "0"],
        "--count 0",
    );
    assert_rejected(
        &["container", "vec", "--key", "8", "--count", "999999999999"],
        "999999999999",
    );
    assert_rejected(
        &[
            "container",
            "vec",
            "--key",
            "8",
            "--count",
            "9",
            "--trace",
            "/nonexistent-dir/t",
        ],
        "/nonexistent-dir",
    );
    assert_rejected(&["containers", "--key", "8", "--value", "0:8"], "size 0");
    assert_rejected(
        &[
            "container",
            "btreemap",
            "--key",
            "8",
            "--value",
            "8",
            "--count",
            "20000000",
        ],
        "btreemap",
    );
    assert_rejected(
        &[
            "container",
            "vec",
            "--key",
            "1048576",
            "--count",
            "100000000",
        ],
        "128 TiB",
    );
}

#[test]
fn container_trace_is_readable_and_matches_the_text_form() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("t.trace");
    let text = dir.path().join("t.txt");
    let out = fragsim(&[
        "container",
        "btreemap",
        "--key",
        "8",
        "--value",
        "24",
        "--count",
        "500",
        "--key-order",
        "random",
        "--seed",
        "3",
        "--trace",
        bin.to_str().unwrap(),
        "--trace-text",
        text.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: Vec<Event> = TraceReader::open(&bin)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    let lines = std::fs::read_to_string(&text).unwrap();
    assert_eq!(read.len(), lines.lines().count());
    assert_eq!(
        read.iter()
            .map(fragsim::trace::event_line)
            .collect::<Vec<_>>(),
        lines.lines().map(str::to_string).collect::<Vec<_>>()
    );
    // Every node allocated is freed.
    let allocs = read
        .iter()
        .filter(|e| matches!(e, Event::Alloc { .. }))
        .count();
    let frees = read
        .iter()
        .filter(|e| matches!(e, Event::Free { .. }))
        .count();
    assert_eq!(allocs, frees);
}

#[test]
fn containers_lists_every_map_side_by_side() {
    let out = fragsim(&[
        "containers",
        "--key",
        "8",
        "--value",
        "24",
        "--count",
        "1000",
        "--format",
        "csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "f14-vector",
        "f14-value",
        "f14-node",
        "f14-vector-2018",
        "f14-vector-2018-split",
        "hashmap",
        "btreemap",
        "absl-flat-hash-map",
        "absl-node-hash-map",
        "vec",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{name},"))),
            "{name}: {text}"
        );
    }
    assert!(!text.contains("hashset"));
}

#[test]
fn unknown_names_are_listed_in_help() {
    let out = fragsim(&["container", "--help"]);
    let text = String::from_utf8(out.stdout).unwrap();
    for kind in ContainerKind::ALL {
        assert!(
            text.contains(kind.name()),
            "{} missing from --help",
            kind.name()
        );
    }
}

#[test]
fn report_section_writes_tables_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let classes = SizeClasses::new(Default::default()).unwrap();
    let section = fragsim::containers::write_section(dir.path(), &classes).unwrap();
    for f in &section.files {
        assert!(std::fs::metadata(f).unwrap().len() > 0, "{}", f.display());
    }
    let names: Vec<String> = section
        .files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "containers-summary.csv",
        "containers-split-verdict.md",
        "containers-split-steps.csv",
        "containers-bytes-per-element.png",
        "containers-split-ratio-by-value-size.svg",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    assert!(section.summary_markdown.contains("absl-flat-hash-map"));
}

#[test]
fn f14_2018_growth_walks_the_seed_models_capacity_steps() {
    // The 2018 containers pass through exactly the capacities the seed sweep prices
    // (`layout::F14Vector::capacity_steps`), requesting its unified block (ff9d6fee) or its
    // two blocks (the parent), for every value size and alignment. (Up to 256 chunks: past
    // that a transient per-chunk byte array joins the rehash.)
    use fragsim::layout::{F14Vector, SplitOrUnified};
    for size in [1u64, 3, 4, 8, 12, 16, 24, 32, 40, 64, 100, 256] {
        for align in [1u64, 4, 8, 16, 32] {
            let value = ElementType::new(size, align).unwrap();
            let text = value.to_string();
            let steps = F14Vector::capacity_steps(2560);
            let table = |capacity| F14Vector {
                value_size: value.size,
                value_align: value.align,
                capacity,
            };
            let unified: Vec<u64> =
                alloc_sizes(&events(ContainerKind::F14Vector2018, &text, None, 2560))
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect();
            let want: Vec<u64> = steps
                .iter()
                .map(|&c| table(c).unified().blocks[0].bytes)
                .collect();
            assert_eq!(unified, want, "unified {text}");
            let split: Vec<u64> = alloc_sizes(&events(
                ContainerKind::F14Vector2018Split,
                &text,
                None,
                2560,
            ))
            .into_iter()
            .map(|(s, _)| s)
            .collect();
            let want: Vec<u64> = steps
                .iter()
                .flat_map(|&c| {
                    let l = table(c).split();
                    [l.blocks[1].bytes, l.blocks[0].bytes]
                })
                .collect();
            assert_eq!(split, want, "split {text}");
        }
    }
}
