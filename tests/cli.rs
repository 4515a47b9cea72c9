//! The command line: outputs parse, bad input gives exit 2 and a one-line message.

use std::process::{Command, Output};

fn fragsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fragsim"))
        .args(args)
        .output()
        .expect("run fragsim")
}

/// Runs fragsim, asserts it succeeded, and returns its standard output.
fn stdout_of(args: &[&str]) -> String {
    let out = fragsim(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
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
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    assert_rejected(&["table", "--sizes", "8..=64:0"], "step 0");
    assert_rejected(&["table", "--sizes", "64..=8:8"], "64..=8");
    assert_rejected(&["table", "--sizes", "0..=8:8"], "start 0");
    assert_rejected(&["table", "--sizes", "a..=8"], "'a'");
    assert_rejected(
        &["table", "--sizes", "8..=99999999999999"],
        "99999999999999",
    );
    assert_rejected(&["table", "--max-capacity", "1"], "1");
    assert_rejected(
        &["table", "--max-capacity", "18446744073709551615"],
        "18446744073709551615",
    );
    assert_rejected(&["table", "--max-capacity", "-5"], "-5");
    assert_rejected(&["table", "--value-align", "3"], "3");
    assert_rejected(&["classes", "--preset", "nope"], "nope");
    assert_rejected(&["table", "--preset", "nope"], "nope");
    assert_rejected(&["classes", "--lg-page", "10"], "lg_page=10");
    assert_rejected(
        &["classes", "--lg-quantum", "13", "--lg-page", "12"],
        "lg_quantum=13",
    );
    assert_rejected(&["classes", "--format", "xml"], "xml");
    assert_rejected(&["table", "--model", "guess"], "guess");
    assert_rejected(&["classes", "--bogus"], "--bogus");
    assert_rejected(&["layout", "--array", "keys:0x10"], "keys:0x10");
    assert_rejected(&["layout", "--array", "keys:8x10:3"], "alignment 3");
    assert_rejected(&["layout", "--array", "keys:8"], "keys:8");
    assert_rejected(&["layout", "--array", "k:1099511627776x2"], "1099511627776");
}

#[test]
fn unwritable_out_is_one_line_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/table.csv");
    assert_rejected(&["table", "--out", missing.to_str().unwrap()], "table.csv");
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("t.csv");
    assert_rejected(&["classes", "--out", under_file.to_str().unwrap()], "t.csv");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn classes_csv_header_and_counts() {
    let out = fragsim(&["classes", "--format", "csv"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("index,size,kind,slab_size,nregs"));
    assert_eq!(text.lines().filter(|l| l.contains(",small,")).count(), 36);
}

#[test]
fn table_csv_columns_and_48_byte_row() {
    let out = fragsim(&[
        "table",
        "--format",
        "csv",
        "--sizes",
        "48",
        "--max-capacity",
        "20",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("value_size,capacity,before_bytes,after_bytes,ratio"));
    // Hand-worked in tests/layout.rs: cap 10 before 576, after 640.
    assert!(
        text.lines()
            .any(|l| l.starts_with("48,10,576,640,1.111111")),
        "{text}"
    );
}

#[test]
fn table_writes_atomically_to_out_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["csv", "md", "json"] {
        let path = dir.path().join(format!("t.{format}"));
        let out = fragsim(&[
            "table",
            "--model",
            "d8485933",
            "--format",
            format,
            "--out",
            path.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("1.127"), "{format}: {text}");
    }
    let json = std::fs::read_to_string(dir.path().join("t.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["rows"].as_array().unwrap().len(), 30);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
}

#[test]
fn layout_prices_any_list_of_arrays() {
    // An F14 chunk (64 B) and ten 48-byte values, by hand: split 64 + 512 (480 -> 512) = 576,
    // unified 544 -> 640 under the default build.
    let text = stdout_of(&[
        "layout",
        "--array",
        "chunks:64x1",
        "--array",
        "values:48x10",
        "--format",
        "csv",
    ]);
    assert!(text.contains("split,total,544,576,576,2"), "{text}");
    assert!(text.contains("unified,total,544,640,640,1"), "{text}");
    assert!(
        text.contains("unified / split,ratio,1.000000,1.111111,1.111111,0.500000"),
        "{text}"
    );
}

#[test]
fn seed_file_is_read_and_malformed_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.csv");
    std::fs::write(&good, "# mine\nvalue_size,footprint_change\n48,1.5\n").unwrap();
    let text = stdout_of(&[
        "table",
        "--model",
        "d8485933",
        "--seed-file",
        good.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    // 48 B under the seed model is 1.127297 (tests/seed.rs); the file says 1.5.
    assert!(text.contains("48,1.127297,1.500000,-0.37270"), "{text}");

    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "value_size,footprint_change\n48,abc\n").unwrap();
    assert_rejected(
        &[
            "table",
            "--model",
            "d8485933",
            "--seed-file",
            bad.to_str().unwrap(),
        ],
        "abc",
    );
    let missing = dir.path().join("missing.csv");
    assert_rejected(
        &[
            "table",
            "--model",
            "d8485933",
            "--seed-file",
            missing.to_str().unwrap(),
        ],
        "missing.csv",
    );
}

/// Issue 18 §7: `fragsim completions bash|zsh|fish` prints a script that offers every
/// subcommand `fragsim --help` lists (read from the help text, not from the code that makes
/// the script), and none of the hidden child commands.
#[test]
fn completions_offer_every_subcommand() {
    let help = stdout_of(&["--help"]);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(commands.len() >= 10, "{help}");
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout_of(&["completions", shell]);
        for command in &commands {
            assert!(
                script.contains(command),
                "{shell} completions lack '{command}'"
            );
        }
        assert!(
            !script.contains("__replay-live-child"),
            "{shell} offers a hidden command"
        );
    }
    // bash: the top-level word list holds each subcommand as a word.
    let bash = stdout_of(&["completions", "bash"]);
    let top = bash
        .lines()
        .find(|l| l.contains("opts=\"") && l.contains(" report "))
        .expect("a top-level opts line");
    for command in &commands {
        assert!(
            top.split(['"', ' ']).any(|w| w == *command),
            "bash top level lacks '{command}': {top}"
        );
    }
    assert_rejected(&["completions", "tcsh"], "tcsh");
}
