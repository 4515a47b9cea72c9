//! Issue 36 §3: the baseline is the allocator the program actually ran with. The recorder reads
//! the program's jemalloc (version, build, options) through its own `mallctl` when the
//! recording ends and keeps it in the trace; `replay --process` then models that build and
//! those options unless told otherwise, and says so. Golden values: a program on Debian's
//! jemalloc 5.3.0, its own statistics at its end (fragsim links 5.3.1, which rounds its large
//! blocks differently: without the recorded build the model was off).

mod common;

use common::{program_stat, stderr_of, summary_row};

#[test]
fn replay_models_the_jemalloc_the_program_ran_with() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = common::jemalloc_program(dir.path(), "large_blocks", &[]) else {
        return;
    };
    let trace = dir.path().join("t.trace");
    let out = common::fragsim()
        .env(
            "MALLOC_CONF",
            "narenas:3,dirty_decay_ms:-1,muzzy_decay_ms:-1",
        )
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    let real = stderr_of(&out);
    assert!(out.status.success(), "{real}");
    let t = trace.to_str().unwrap();
    let stats = common::run_ok(&["trace", "stats", t, "--format", "csv"]);
    assert!(
        stats.contains(",allocator\n") && stats.contains("\"jemalloc 5.3.0 (narenas:3,"),
        "{stats}"
    );
    let replay = common::run_ok(&["replay", t, "--process"]);
    assert!(
        replay.contains("3 arenas (the recorded program's jemalloc 5.3.0: narenas:3,")
            && replay.contains("dirty_decay_ms:-1,muzzy_decay_ms:-1"),
        "{replay}"
    );
    for (name, row) in [
        ("stats.allocated", "final allocated bytes"),
        ("stats.active", "final active bytes"),
    ] {
        assert_eq!(
            summary_row(&replay, row),
            program_stat(&real, name),
            "{name}"
        );
    }
    // The linked build, asked for, is not what ran: 5.3.1 rounds 33,000 bytes to 36,864.
    let linked = common::run_ok(&["replay", t, "--process", "--preset", "5.3.1"]);
    assert_ne!(
        summary_row(&linked, "final allocated bytes"),
        program_stat(&real, "stats.allocated")
    );
    // --malloc-conf wins over the recorded options, --cpus over its narenas.
    let conf = common::run_ok(&[
        "replay",
        t,
        "--process",
        "--malloc-conf",
        "narenas:2",
        "--cpus",
        "1",
    ]);
    assert!(conf.contains(", 2 arenas ("), "{conf}");
    let cpus = common::run_ok(&["replay", t, "--process", "--cpus", "2"]);
    assert!(cpus.contains(", 8 arenas ("), "{cpus}");
    // advise's defaults row is that allocator too (decay off), and 5.3.1 the other release.
    let advice = common::run_ok(&["advise", t, "--no-live"]);
    assert!(
        advice.contains("the defaults are the recorded program's jemalloc 5.3.0 with its options (narenas:3,tcache:true,")
            && advice.contains("and narenas 3."),
        "{advice}"
    );
    // `view --with advise` moves its grid onto that allocator as advise does: the page's
    // advise table starts with the defaults row of 5.3.0 and its 3 arenas, and its title
    // names the recorded build.
    let page = dir.path().join("page.html");
    common::run_ok(&["view", t, "-o", page.to_str().unwrap(), "--with", "advise"]);
    let html = std::fs::read_to_string(&page).unwrap();
    let table = &html[html.find("(fragsim advise --no-live)").unwrap()..];
    assert!(
        table.contains(
            "<tbody><tr><td data-v=\"\"></td><td data-v=\"\">5.3.0</td><td data-v=\"3\">3</td>"
        ),
        "{}",
        &table[..table.len().min(600)]
    );
    assert!(
        html.contains("Modelled: jemalloc 5.3.0 (the recorded program"),
        "the title"
    );
}

/// A program that carries its own allocator bypasses a preloaded recorder, silently before:
/// fragsim itself links jemalloc with the `_rjem_` prefix (tikv-jemallocator, Cargo.toml), so
/// recording it says so, naming the symbol; a program on the shared jemalloc gets no such
/// warning (its calls are all recorded).
#[test]
fn a_program_with_its_own_allocator_is_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("self.trace");
    let out = common::fragsim()
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_fragsim"))
        .args(["classes", "--format", "csv"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("carries its own allocator, jemalloc with the _rjem_ prefix")
            && err.contains("_rjem_malloc"),
        "{err}"
    );
    let Some(exe) = common::jemalloc_program(dir.path(), "large_blocks", &[]) else {
        return;
    };
    let out = common::fragsim()
        .args(["record", "-o"])
        .arg(dir.path().join("shared.trace"))
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("its own allocator"), "{err}");
}
