//! `fragsim view`: one self-contained HTML page per trace (issue 37 §1). The page's figures
//! come from the same library as `replay --process` and `--blame` (checked against their
//! own output here), it fetches nothing, and in a real browser (Debian's headless
//! `chromium`, skipped with a message where absent) its script runs, draws every moment and
//! follows the slider to another moment.

mod common;

use common::{assert_refused, csv_rows, run, run_ok, s, stderr_of};
use std::path::{Path, PathBuf};
use std::process::Command;

fn committed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/traces")
        .join(name)
}

fn view(trace: &Path, page: &Path) -> String {
    let out = run(&[
        "view",
        s(trace),
        "-o",
        s(page),
        "--cpus",
        "2",
        "--preset",
        "5.3.1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    std::fs::read_to_string(page).unwrap()
}

/// `chromium --headless ARGS URL`'s standard output, or `None` (saying so) without chromium.
fn chromium(args: &[&str], url: &str, home: &Path) -> Option<String> {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
        ])
        .args(args)
        .arg(url)
        .env("HOME", home)
        .output();
    match out {
        Ok(out) => {
            assert!(out.status.success(), "{}", stderr_of(&out));
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Err(_) => {
            eprintln!("SKIPPED the browser check: needs chromium (apt-get install chromium)");
            None
        }
    }
}

#[test]
fn the_page_shows_the_models_figures_and_draws_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let trace = committed("cpp-threads-map.trace");
    let page = dir.path().join("page.html");
    let html = view(&trace, &page);
    // Self-contained: no script, style or image comes from anywhere (namespaces aside).
    for attr in ["src=\"http", "href=\"http", "src='http", "@import"] {
        assert!(!html.contains(attr), "{attr}");
    }
    // The active peak as `replay --process` reports it, event and bytes.
    let summary = csv_rows(&run_ok(&[
        "replay",
        s(&trace),
        "--process",
        "--cpus",
        "2",
        "--preset",
        "5.3.1",
        "--format",
        "csv",
    ]));
    let peak: u64 = summary[0]["peak_active_bytes"].parse().unwrap();
    let event: u64 = summary[0]["active_peak_event"].parse().unwrap();
    let thousands = |n: u64| fragsim::export::human::thousands(n);
    assert!(
        html.contains(&format!(
            "active peak {} ({:.2} MiB) at event {}",
            thousands(peak),
            peak as f64 / 1048576.0,
            thousands(event)
        )),
        "peak {peak} at {event}"
    );
    // The blame at the peak: `replay --blame`'s total waste is the peak moment's.
    let blame = csv_rows(&run_ok(&[
        "replay",
        s(&trace),
        "--blame",
        "--cpus",
        "2",
        "--preset",
        "5.3.1",
        "--format",
        "csv",
    ]));
    let total = blame.iter().find(|r| r["site"] == "total").unwrap();
    let moment = format!("[{event},{peak},{}]", total["waste_bytes"]);
    assert!(html.contains(&moment), "{moment}");
    // 24 evenly spaced moments and the peak.
    assert!(html.matches("<svg").count() >= 25);
    let url = format!("file://{}", page.display());
    let Some(dom) = chromium(&["--dump-dom"], &url, dir.path()) else {
        return;
    };
    // The script ran: every moment's flame graph parsed, the slider at the peak.
    assert!(
        dom.contains(&format!("data-moment=\"{event}\" data-drawn=\"25\"")),
        "{}",
        &dom[..dom.len().min(400)]
    );
    // The moment's flame graph loaded in its frame (the script timed it).
    assert!(
        dom.contains("data-draw-ms=\""),
        "{}",
        &dom[..dom.len().min(400)]
    );
    // The slider moved to the first moment (`#moment=0`): 62,422 calls + 4 thread exits
    // = 62,426 events, the first of 24 even moments is event 62,426 / 24 = 2,601.
    let first = chromium(&["--dump-dom"], &format!("{url}#moment=0"), dir.path()).unwrap();
    assert!(
        first.contains("data-moment=\"2601\""),
        "{}",
        &first[..first.len().min(400)]
    );
    let shot = dir.path().join("page.png");
    chromium(
        &[
            "--window-size=1200,1500",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
        dir.path(),
    );
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "a drawn page"
    );
}

#[test]
fn bad_view_options_exit_2_naming_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let trace = committed("sort.trace");
    let page = dir.path().join("p.html");
    let out = run(&["view", s(&trace), "-o", s(&page), "--moments", "0"]);
    assert_refused(&out, "--moments 0");
    let out = run(&["view", s(&trace), "-o", s(&trace)]);
    assert_refused(&out, "the trace");
    assert!(!page.exists(), "nothing written");
}

/// `--with advise,builds` adds advise's table (the defaults row is `fragsim advise`'s, its
/// figures the same) and every preset build's row.
#[test]
fn with_adds_the_advise_and_builds_tables() {
    let dir = tempfile::tempdir().unwrap();
    let trace = committed("cpp-threads-map.trace");
    let page = dir.path().join("page.html");
    let out = run(&[
        "view",
        s(&trace),
        "-o",
        s(&page),
        "--cpus",
        "2",
        "--with",
        "advise,builds",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    let advise = csv_rows(&run_ok(&[
        "advise",
        s(&trace),
        "--cpus",
        "2",
        "--no-live",
        "--format",
        "csv",
    ]));
    let peak: u64 = advise[0]["peak_resident_bytes"].parse().unwrap();
    assert!(
        html.contains(&format!("<td data-v=\"{peak}\">")),
        "the defaults' peak resident {peak}"
    );
    for build in ["5.3.0", "quantum8", "page16k", "page64k", "5.3.1", "redis"] {
        assert!(
            html.contains(&format!("<td data-v=\"\">{build}</td>")),
            "{build}"
        );
    }
}
