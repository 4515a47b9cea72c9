//! Issue 37 §3: a stripped program's stacks. `fragsim record --stacks` names a frame by the
//! function around it from the module's symbol table; a stripped binary has none of its own
//! functions there, so its frames stay `prog+0xOFFSET` and `record` says so in one line, naming
//! the module. Its separate debug file (`objcopy --only-keep-debug`, found as gdb finds it:
//! by build id under /usr/lib/debug/.build-id, or by `.gnu_debuglink` beside the binary) gives
//! the names back. The golden names are the test program's own functions
//! (tests/native_programs/stacks.c: `alloc_here` and `alloc_there`, called from `main`).

mod common;

use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", common::stderr_of(&out));
}

/// The frames of the trace's sites (text form `s ID FRAME;FRAME...`) and `record`'s stderr.
fn record_stacks(dir: &Path, exe: &Path) -> (String, String) {
    let trace = dir.join("t.trace");
    let out = common::fragsim()
        .args(["record", "--stacks", "--force", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(exe)
        .output()
        .unwrap();
    let stderr = common::stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    let sites = common::dump(&trace)
        .lines()
        .filter(|l| l.starts_with("s "))
        .collect::<Vec<_>>()
        .join("\n");
    (sites, stderr)
}

#[test]
fn a_stripped_program_is_named_from_its_debug_file_or_hinted() {
    if !Path::new("/usr/lib/x86_64-linux-gnu/libunwind.so.8").exists()
        || Command::new("objcopy").arg("--version").output().is_err()
    {
        eprintln!("SKIPPED: needs libunwind8 and binutils (objcopy, strip)");
        return;
    }
    common::build_preload();
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("stacks");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native_programs/stacks.c");
    run(Command::new("cc")
        .args(["-g", "-O1", "-o"])
        .arg(&exe)
        .arg(&src));
    let debug = dir.path().join("stacks.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&exe)
        .arg(&debug));
    run(Command::new("strip").arg("--strip-all").arg(&exe));

    // Stripped, no debug file: the program's frames unnamed, and the hint names it.
    let (sites, stderr) = record_stacks(dir.path(), &exe);
    assert!(!sites.contains("alloc_here"), "{sites}");
    assert!(sites.contains("/stacks+0x"), "{sites}");
    let hint = stderr
        .lines()
        .find(|l| l.contains("have no function name"))
        .unwrap_or_else(|| panic!("no hint: {stderr}"));
    assert!(hint.contains(&format!("'{}'", exe.display())), "{hint}");
    assert!(
        hint.contains("-dbgsym") && hint.contains(".gnu_debuglink"),
        "{hint}"
    );

    // Its debug file linked beside it: the functions named again, no hint for it.
    run(Command::new("objcopy")
        .arg(format!("--add-gnu-debuglink={}", debug.display()))
        .arg(&exe)
        .current_dir(dir.path()));
    let (sites, stderr) = record_stacks(dir.path(), &exe);
    for name in ["alloc_here+0x", "alloc_there+0x", "main+0x"] {
        assert!(sites.contains(name), "{name}: {sites}");
    }
    assert!(
        !stderr.contains(&format!("'{}'", exe.display())),
        "{stderr}"
    );
}
