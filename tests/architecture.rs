//! The import rules of ARCHITECTURE.md, checked by reading the sources: every `crate::X` path
//! outside comments, per top-level folder of `src/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Source lines without `//` comments (doc comments included) and string-free enough for the
/// checks: a `crate::` inside a string literal would count, which no source does.
fn code_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => l[..i].to_string(),
            None => l.to_string(),
        })
        .collect()
}

/// The top-level modules a folder's code names through `crate::`.
fn imports_of(folder: &str) -> BTreeSet<(String, String)> {
    let mut files = Vec::new();
    rust_files(&Path::new("src").join(folder), &mut files);
    let mut found = BTreeSet::new();
    for file in files {
        for line in code_lines(&file) {
            let mut rest = line.as_str();
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + 7..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                found.insert((name, file.display().to_string()));
            }
            // `use crate::{a, b}` groups.
            if let Some(i) = line.find("crate::{") {
                let group = &line[i + 8..];
                for name in group.split([',', '}', ' ']).filter(|s| !s.is_empty()) {
                    let name = name.split("::").next().unwrap().to_string();
                    found.insert((name, file.display().to_string()));
                }
            }
        }
    }
    found
}

#[test]
fn folders_import_only_what_architecture_md_allows() {
    // folder -> modules it must not import (ARCHITECTURE.md, "Code map").
    let rules: &[(&str, &[&str])] = &[
        (
            "sim",
            &[
                "live", "check", "whatif", "report", "charts", "validate", "cli",
            ],
        ),
        (
            "trace",
            &[
                "sim", "live", "check", "whatif", "report", "charts", "validate", "cli",
            ],
        ),
        (
            "charts",
            &[
                "sim",
                "trace",
                "live",
                "check",
                "whatif",
                "report",
                "validate",
                "experiments",
                "containers",
            ],
        ),
        (
            "layout",
            &["sim", "trace", "live", "check", "report", "cli"],
        ),
        ("containers", &["sim", "live", "check", "report", "cli"]),
        ("whatif", &["live", "check", "analysis", "report", "cli"]),
        ("advise", &["whatif", "report", "cli"]),
        ("blame", &["live", "check", "whatif", "report", "cli"]),
        (
            "route",
            &["live", "check", "whatif", "report", "charts", "cli"],
        ),
        ("check", &["report", "whatif", "charts", "cli"]),
        (
            "analysis",
            &[
                "live", "check", "advise", "blame", "report", "charts", "cli",
            ],
        ),
        ("validate", &["report", "cli"]),
        ("experiments", &["cli"]),
        ("report", &["cli"]),
        ("view", &["cli", "report", "live", "check"]),
    ];
    let mut broken = Vec::new();
    for (folder, forbidden) in rules {
        for (name, file) in imports_of(folder) {
            if forbidden.contains(&name.as_str()) {
                broken.push(format!("{file} imports crate::{name}"));
            }
        }
    }
    // Leaves: only the modules named.
    for (folder, allowed) in [
        ("sizeclass", &["export", "choice"][..]),
        ("export", &["cleanup", "choice"][..]),
        ("engine", &["trace"][..]),
        // The bindings to the running jemalloc import no model (the comparisons are in
        // `check`, between the models and the bindings).
        ("live", &["sizeclass"][..]),
    ] {
        for (name, file) in imports_of(folder) {
            if name != folder && !allowed.contains(&name.as_str()) {
                broken.push(format!("{file} imports crate::{name}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "import rules broken:\n{}",
        broken.join("\n")
    );
}

/// Lines outside `src/cli` that mention `word` anywhere, comments included (a doc comment
/// about the word is a sign of that concern leaking into the library).
fn mentions_outside_cli(word: &str) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    let mut mentions = Vec::new();
    for file in files {
        if file.starts_with("src/cli") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.contains(word) {
                mentions.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    mentions
}

/// Library first: argument parsing is the command line's, so no module outside `src/cli`
/// names clap (named choices implement `crate::choice::Choice`; `cli::choice` parses them).
#[test]
fn only_cli_mentions_clap() {
    let mentions = mentions_outside_cli("clap");
    assert!(
        mentions.is_empty(),
        "clap outside src/cli:\n{}",
        mentions.join("\n")
    );
}

/// Library modules report progress to an observer (`validate::Progress`); only `cli` draws.
#[test]
fn only_cli_draws_progress_bars() {
    let mentions = mentions_outside_cli("indicatif");
    assert!(
        mentions.is_empty(),
        "indicatif outside src/cli:\n{}",
        mentions.join("\n")
    );
}

#[test]
fn only_cli_prints() {
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    let mut printing = Vec::new();
    for file in files {
        if file.starts_with("src/cli") || file == Path::new("src/main.rs") {
            continue;
        }
        for (n, line) in code_lines(&file).iter().enumerate() {
            for mac in ["println!", "eprintln!", "print!(", "eprint!("] {
                if line.contains(mac) {
                    printing.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        printing.is_empty(),
        "printing outside cli:\n{}",
        printing.join("\n")
    );
}

#[test]
fn every_trace_is_opened_through_trace_open() {
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    let mut bypass = Vec::new();
    for file in files {
        if file.starts_with("src/trace") {
            continue;
        }
        for (n, line) in code_lines(&file).iter().enumerate() {
            for door in ["TraceReader::open", "TraceReader::named", "read_text_named"] {
                if line.contains(door) {
                    bypass.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        bypass.is_empty(),
        "traces opened around trace::open:\n{}",
        bypass.join("\n")
    );
}

/// Every child fragsim waits for is stopped on interrupt: it is started through
/// `cleanup::GuardedChild::spawn` (or `cleanup::output`), never by a bare `Command::spawn`
/// with a registration of its own.
#[test]
fn children_start_through_guarded_child() {
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    let mut bare = Vec::new();
    for file in files {
        if file == Path::new("src/cleanup.rs") {
            continue;
        }
        for (n, line) in code_lines(&file).iter().enumerate() {
            for start in [".spawn()", "stop_on_interrupt("] {
                if line.contains(start) {
                    bare.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        bare.is_empty(),
        "children started around cleanup::GuardedChild:\n{}",
        bare.join("\n")
    );
}

#[test]
fn the_checker_sees_a_forbidden_import() {
    // The checks can fail: a line as the rules read it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.rs");
    std::fs::write(
        &file,
        "use crate::live::ctl; // crate::report in a comment\n",
    )
    .unwrap();
    let lines = code_lines(&file);
    assert!(lines[0].contains("crate::live"));
    assert!(!lines[0].contains("crate::report"));
}

/// The `pub mod` lines of the files under `src/` other than `lib.rs`.
fn public_submodules(files: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for f in files {
        if f.ends_with("src/lib.rs") {
            continue;
        }
        for line in code_lines(f) {
            if line.trim_start().starts_with("pub mod ") {
                found.push(format!("{}: {}", f.display(), line.trim()));
            }
        }
    }
    found
}

#[test]
fn every_module_is_a_facade_one_level_deep() {
    // The public surface (lib.rs's "The public surface"): a module's submodules are the
    // crate's own; what it offers is in its root file, so public paths are one level deep.
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    let deep = public_submodules(&files);
    assert!(
        deep.is_empty(),
        "public submodules (make them pub(crate), re-export what users need in the module's root file):\n{}",
        deep.join("\n")
    );
    // The check can fail: a file with a public submodule is seen.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mod.rs");
    std::fs::write(&file, "pub(crate) mod a;\npub mod b;\n").unwrap();
    assert_eq!(public_submodules(&[file]).len(), 1);
}

/// The files under `src/cli` other than `mod.rs` and `replay.rs` that name `super::replay::`.
fn importers_of_replay(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .filter(|f| !f.ends_with("cli/mod.rs") && !f.ends_with("cli/replay.rs"))
        .filter(|f| code_lines(f).iter().any(|l| l.contains("super::replay::")))
        .map(|f| f.display().to_string())
        .collect()
}

#[test]
fn replay_modes_read_the_command_line_not_the_dispatcher() {
    // `cli/replay_args.rs` holds `replay`'s arguments; `cli/replay.rs` picks the mode and
    // calls the mode's file, which never imports `replay.rs` back (no circle).
    let mut files = Vec::new();
    rust_files(Path::new("src/cli"), &mut files);
    let back = importers_of_replay(&files);
    assert!(
        back.is_empty(),
        "mode files importing cli/replay.rs: {back:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blame.rs");
    std::fs::write(&file, "use super::replay::ReplayArgs;\n").unwrap();
    assert_eq!(importers_of_replay(&[file]).len(), 1);
}
