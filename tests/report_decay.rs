//! The report's decay section from the committed live bands (data/decay, measured by
//! scripts/decay-band.sh): deterministic, and the model within the bands' spread.

use std::path::Path;

/// The bands scripts/decay-band.sh commits: cpp-threads-map, python-threads, c-thread-pool,
/// bursty, bursty-muzzy, idle, idle-10.
const BANDS: usize = 7;

/// Two runs of the section write the same bytes (the model is seeded, the bands are data).
#[test]
fn the_decay_section_is_reproduced_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&a, &b] {
        std::fs::create_dir_all(d.path().join("charts")).unwrap();
    }
    let out = fragsim::report::write_decay_section(a.path(), root).unwrap();
    fragsim::report::write_decay_section(b.path(), root).unwrap();
    // The summary (CSV and Markdown), then per band its checkpoints and chart (PNG, SVG).
    assert_eq!(out.files.len(), 2 + BANDS * 3, "{:?}", out.files);
    for w in &out.files {
        let x = std::fs::read(a.path().join(&w.file)).unwrap();
        let y = std::fs::read(b.path().join(&w.file)).unwrap();
        assert!(x == y, "{} differs between two runs", w.file);
    }
    // The goal on the committed bands (measured live, 5.3.1): on every band the
    // model's mean error on resident is below the live runs' mean spread.
    let summary = std::fs::read_to_string(a.path().join("decay-summary.csv")).unwrap();
    let mut rows = summary.lines();
    let head: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (err, spread) = (col("resident_mean_error_mib"), col("real_mean_spread_mib"));
    let mut n = 0;
    for row in rows {
        let f: Vec<&str> = row.split(',').collect();
        let (e, s): (f64, f64) = (f[err].parse().unwrap(), f[spread].parse().unwrap());
        assert!(e < s, "{}: error {e} MiB, spread {s} MiB", f[0]);
        n += 1;
    }
    assert_eq!(n, BANDS, "every committed band");
}
