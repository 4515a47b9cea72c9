//! The "Real programs" section: tables and charts written, non-empty, identical on a rerun.

mod whatif_support;

use fragsim::report::{write_programs_section, LiveCheck, ProgramReplays};
use fragsim::whatif::{chart_every, parse_builds, replay_build, ReplayOptions};
use whatif_support::{random_trace, CountingArena};

fn program() -> ProgramReplays {
    let trace = random_trace(3_000, 11);
    let every = chart_every(trace.len() as u64);
    let replays = parse_builds("default,quantum8,page64k")
        .unwrap()
        .iter()
        .map(|b| {
            let events = trace.iter().map(|&e| Ok::<_, std::io::Error>(e));
            let arena = CountingArena::new(b.config);
            replay_build(
                b,
                arena,
                events,
                ReplayOptions { every: Some(every) },
                &|_| {},
            )
            .unwrap()
        })
        .collect();
    ProgramReplays {
        name: "random".into(),
        replays,
        live: Some(LiveCheck {
            build: "q16-p4096".into(),
            snapshots: 3,
            compared: 12,
            mismatched: 0,
        }),
    }
}

fn read_all(dir: &std::path::Path, files: &[String]) -> Vec<Vec<u8>> {
    files
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect()
}

#[test]
fn section_writes_tables_and_charts_deterministically() {
    let program = program();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let first = write_programs_section(a.path(), std::slice::from_ref(&program)).unwrap();
    let second = write_programs_section(b.path(), &[program]).unwrap();
    let files: Vec<String> = first.files.iter().map(|f| f.file.clone()).collect();
    for expected in [
        "programs-random-whatif.csv",
        "programs-random-whatif.md",
        "programs-random-classes.csv",
        "charts/programs-random-timeline.png",
        "charts/programs-random-whatif.svg",
        "charts/programs-random-class-loss.png",
        "programs.md",
    ] {
        assert!(
            files.iter().any(|f| f == expected),
            "{expected} not in {files:?}"
        );
    }
    for (file, bytes) in files.iter().zip(read_all(a.path(), &files)) {
        assert!(bytes.len() > 100, "{file} is nearly empty");
    }
    assert_eq!(read_all(a.path(), &files), read_all(b.path(), &files));
    assert_eq!(first.markdown, second.markdown);
    let md = &first.markdown;
    assert!(md.contains("## Real programs"));
    assert!(md.contains("| build | events | peak_requested_bytes"));
    assert!(md.contains("12 statistics compared at 3 events, 0 mismatched"));
    assert!(md.contains("![")); // charts inline
    let svg = std::fs::read_to_string(a.path().join("charts/programs-random-whatif.svg")).unwrap();
    for text in ["quantum8", "size-class rounding", "empty slab regions"] {
        assert!(svg.contains(text), "whatif chart lacks '{text}'");
    }
}

#[test]
fn an_unwritable_folder_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, b"x").unwrap();
    let err = write_programs_section(&file, &[program()]).unwrap_err();
    assert!(format!("{err:#}").contains("not-a-folder"));
}

#[test]
fn every_trace_in_the_folder_is_replayed_and_checked_live() {
    use fragsim::report::{write_programs, ProgramsOptions};
    let root = tempfile::tempdir().unwrap();
    let traces = root.path().join("data/traces");
    std::fs::create_dir_all(&traces).unwrap();
    fragsim::trace::write_trace(
        &traces.join("hand.trace"),
        whatif_support::hand_trace().into_iter().map(Ok),
    )
    .unwrap();
    let out = root.path().join("reports");
    std::fs::create_dir_all(&out).unwrap();
    let section = write_programs(&out, &ProgramsOptions::new(root.path())).unwrap();
    let md = &section.markdown;
    // Five builds, in the report's order.
    for build in [
        "| 5.3.0 |",
        "| quantum8 |",
        "| page16k |",
        "| page64k |",
        "| 5.3.1 |",
    ] {
        assert!(md.contains(build), "{build} missing:\n{md}");
    }
    // 323 events, one snapshot each: the model equals jemalloc at every one.
    assert!(md.contains("at 323 events, 0 mismatched"), "{md}");
    assert!(out.join("charts/programs-hand-whatif.png").exists());
}
