//! Flame graphs (SVG, the `inferno` crate) from folded stacks: plain `frame;frame value`
//! lines, outermost frame first.

use anyhow::{anyhow, Result};

/// An SVG flame graph of `folded` lines (`frame;frame;frame value`), titled `title`, the
/// values counted in `unit` (e.g. "bytes"). An empty input draws an empty graph.
pub(crate) fn flame_graph_svg(title: &str, unit: &str, folded: &[String]) -> Result<Vec<u8>> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = unit.to_string();
    // Deterministic output: no random colours, the same file for the same input.
    options.deterministic = true;
    options.hash = true;
    let mut out = Vec::new();
    if folded.is_empty() {
        // inferno refuses an input without samples; one zero-width line keeps the file valid.
        let empty = ["[nothing] 0".to_string()];
        inferno::flamegraph::from_lines(&mut options, empty.iter().map(String::as_str), &mut out)
    } else {
        inferno::flamegraph::from_lines(&mut options, folded.iter().map(String::as_str), &mut out)
    }
    .map_err(|e| anyhow!("flame graph: {e}"))?;
    Ok(out)
}
