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
    let thousands = |n: u64| fragsim::export::thousands(n);
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
    // One curve per arena the model used: the arenas of `replay --process --per-arena`'s
    // rows (the same options, sampled at the same K events).
    let arenas = arenas_used(&trace, dir.path());
    assert!(arenas > 1, "a multi-threaded trace uses several arenas");
    assert_eq!(html.matches("<polyline class=\"arena\"").count(), arenas);
    assert!(html.contains(&format!("({arenas} arenas the model used)")));
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
    // Hidden by default; `#arenas` ticks the box and shows every arena's curve.
    assert!(
        dom.contains("data-arenas=\"0\""),
        "{}",
        &dom[..dom.len().min(400)]
    );
    let shown = chromium(&["--dump-dom"], &format!("{url}#arenas"), dir.path()).unwrap();
    assert!(
        shown.contains(&format!("data-arenas=\"{arenas}\"")),
        "{}",
        &shown[..shown.len().min(400)]
    );
    screenshot(
        &format!("{url}#arenas"),
        &dir.path().join("page.png"),
        dir.path(),
    );
}

/// A screenshot of the page at `url` in `shot` (kept where FRAGSIM_VIEW_SHOTS names a
/// folder, to look at), checked to have drawn something.
fn screenshot(url: &str, shot: &Path, home: &Path) {
    chromium(
        &[
            "--window-size=1200,1500",
            &format!("--screenshot={}", shot.display()),
        ],
        url,
        home,
    );
    assert!(
        std::fs::metadata(shot).unwrap().len() > 10_000,
        "a drawn page"
    );
    if let Ok(keep) = std::env::var("FRAGSIM_VIEW_SHOTS") {
        std::fs::copy(shot, Path::new(&keep).join(shot.file_name().unwrap())).unwrap();
    }
}

/// The arenas `replay --process --per-arena` has rows for (as `view` models the trace).
fn arenas_used(trace: &Path, dir: &Path) -> usize {
    let csv = dir.join("per-arena.csv");
    run_ok(&[
        "replay",
        s(trace),
        "--process",
        "--cpus",
        "2",
        "--preset",
        "5.3.1",
        "--per-arena",
        s(&csv),
        "--format",
        "csv",
    ]);
    let rows = csv_rows(&std::fs::read_to_string(&csv).unwrap());
    let mut arenas: Vec<&str> = rows.iter().map(|r| r["arena"].as_str()).collect();
    arenas.sort_unstable();
    arenas.dedup();
    arenas.len()
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
    // A band measured on another trace: data/decay/idle.csv is of data/traces/decay/idle.trace
    // (its last checkpoint, event 6,762), not of cpp-threads-map (62,426 events).
    let band = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/decay/idle.csv");
    let other = committed("cpp-threads-map.trace");
    let out = run(&["view", s(&other), "-o", s(&page), "--band", s(&band)]);
    assert_refused(&out, "--band");
    assert!(
        stderr_of(&out).contains("6762 events"),
        "{}",
        stderr_of(&out)
    );
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

/// `--band FILE` draws the real allocator's resident band, min to max over its runs, beside
/// the model's resident line. The band is measured here, short: cpp-threads-map (81 ms on
/// its clock) twice on the trace's clock.
#[test]
fn a_band_draws_the_real_allocators_resident_range() {
    let dir = tempfile::tempdir().unwrap();
    let trace = committed("cpp-threads-map.trace");
    let band = dir.path().join("band.csv");
    run_ok(&[
        "replay",
        s(&trace),
        "--process",
        "--malloc-conf",
        "dirty_decay_ms:100,muzzy_decay_ms:0",
        "--live",
        "--honour-clock",
        "--runs",
        "2",
        "--save-band",
        s(&band),
        "--format",
        "csv",
    ]);
    let page = dir.path().join("band.html");
    let out = run(&[
        "view",
        s(&trace),
        "-o",
        s(&page),
        "--cpus",
        "2",
        "--band",
        s(&band),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<polygon id=\"band\""), "the band is drawn");
    assert!(
        html.contains("min to max over 2 timed live runs (malloc_conf dirty_decay_ms:100,muzzy_decay_ms:0, time scale 1)"),
        "the legend says what the band is"
    );
    // The model ran with the band's options (said on the page).
    assert!(html.contains("its malloc_conf dirty_decay_ms:100,muzzy_decay_ms:0"));
    let url = format!("file://{}", page.display());
    let Some(dom) = chromium(&["--dump-dom"], &url, dir.path()) else {
        return;
    };
    assert!(
        dom.contains("data-drawn=\"25\""),
        "{}",
        &dom[..dom.len().min(400)]
    );
    screenshot(
        &format!("{url}#arenas"),
        &dir.path().join("band.png"),
        dir.path(),
    );
}

/// The cells of the first body row of the table under the heading starting `heading`: each
/// cell's raw value (`data-v`) and its text.
fn first_row(html: &str, heading: &str) -> Vec<(String, String)> {
    let table = &html[html.find(heading).expect(heading)..];
    let body = &table[table.find("<tbody><tr>").unwrap() + 11..];
    let row = &body[..body.find("</tr>").unwrap()];
    row.split("<td data-v=\"")
        .skip(1)
        .map(|cell| {
            let (raw, rest) = cell.split_once("\">").unwrap();
            (raw.to_string(), rest.trim_end_matches("</td>").to_string())
        })
        .collect()
}

/// `--with routes` adds `advise --routes 5 --no-live`'s table, its first row the same as
/// the CLI's; a trace without call sites gets a sentence saying routing needs them.
#[test]
fn with_routes_adds_the_routing_table() {
    let dir = tempfile::tempdir().unwrap();
    let trace = committed("cpp-threads-map.trace");
    let page = dir.path().join("page.html");
    let args = ["--cpus", "2", "--with", "routes"];
    let out = run(&[&["view", s(&trace), "-o", s(&page)][..], &args[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    let text = run_ok(&[
        "advise",
        s(&trace),
        "--routes",
        "5",
        "--no-live",
        "--cpus",
        "2",
        "--format",
        "csv",
    ]);
    // The table, without the sentence after it (nothing to route here).
    let text = text.split("\n\n").next().unwrap();
    let cli = &csv_rows(text)[0];
    let columns = text.lines().next().unwrap().split(',');
    let row = first_row(&html, "<h2>advise --routes for cpp-threads-map");
    for (column, (raw, shown)) in columns.zip(&row) {
        let want = &cli[column];
        match (raw.parse::<f64>(), want.parse::<f64>()) {
            // Floats: the CLI's rounding of the raw value.
            (Ok(v), Ok(w)) => {
                let places = want.split('.').nth(1).map_or(0, str::len) as i32;
                let scale = 10f64.powi(places);
                assert_eq!((v * scale).round() / scale, w, "{column}");
            }
            _ => assert_eq!(shown.replace("&quot;", "\""), *want, "{column}"),
        }
    }
    assert_eq!(row.len(), cli.len());
    let bare = committed("python-threads.trace");
    let out = run(&[&["view", s(&bare), "-o", s(&page)][..], &args[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(
            "Routing needs call sites, and this trace has none: record it with --stacks."
        ),
        "python-threads.trace has no sites"
    );
}

/// Beside a band, the model as `fragsim report` compares it with the band (one run per live
/// run, each from that run's start-up as measured): on the committed cpp-threads-map band its
/// line is drawn and its mean error is the report's own figure for that band
/// (reports/decay-summary.md, `resident_mean_error_mib`, written by another path: the
/// report's decay section).
#[test]
fn the_band_comes_with_the_model_the_report_compares_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = dir.path().join("band.html");
    run_ok(&[
        "view",
        s(&committed("cpp-threads-map.trace")),
        "-o",
        s(&page),
        "--cpus",
        "2",
        "--band",
        s(&root.join("data/decay/cpp-threads-map.csv")),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<polyline id=\"band-model\""),
        "the model's line"
    );
    let summary = std::fs::read_to_string(root.join("reports/decay-summary.md")).unwrap();
    let row = summary
        .lines()
        .find(|l| l.starts_with("| cpp-threads-map |"))
        .expect("the report's row");
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // | band | dirty | muzzy | time_scale | runs | checkpoints | resident_mean_error_mib | ...
    let error = cells[7];
    assert!(
        html.contains(&format!("mean of 5 (mean error {error} MiB)")),
        "the report's {error} MiB"
    );
}
