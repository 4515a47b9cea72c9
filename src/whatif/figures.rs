//! Chart data from replays: the charts themselves take plain numbers.

use super::replay::BuildReplay;
use crate::charts::{BytesTimeline, ClassLoss, StackedBars};

/// Requested, allocated and active bytes against event index for one build.
pub(crate) fn timeline_chart(name: &str, program: &str, replay: &BuildReplay) -> BytesTimeline {
    let series = |label: &str, pick: fn(&super::Totals) -> u64| {
        (
            label.to_string(),
            replay
                .timeline
                .iter()
                .map(|p| (p.event, pick(&p.totals)))
                .collect(),
        )
    };
    BytesTimeline {
        name: name.to_string(),
        title: format!("{program}: heap over the trace, build {}", replay.build),
        series: vec![
            series("requested", |t| t.requested),
            series("allocated (size classes)", |t| t.allocated),
            series("active (pages)", |t| t.active),
        ],
    }
}

/// Peak active bytes per build, split into requested bytes, rounding and slab fragmentation
/// (empty regions, with large padding as its own part).
pub(crate) fn whatif_chart(name: &str, program: &str, replays: &[BuildReplay]) -> StackedBars {
    let part = |label: &str, pick: fn(&BuildReplay) -> u64| {
        (label.to_string(), replays.iter().map(pick).collect())
    };
    StackedBars {
        name: name.to_string(),
        title: format!("{program}: peak active bytes per jemalloc build"),
        y_desc: "active at the peak".into(),
        categories: replays.iter().map(|r| r.build.clone()).collect(),
        parts: vec![
            part("requested", |r| r.at_peak.requested),
            part("size-class rounding", |r| r.at_peak.rounding),
            part("empty slab regions", |r| r.at_peak.empty_regions),
            part("large padding page", |r| r.at_peak.large_pad),
        ],
    }
}

/// The `top` classes losing the most bytes at the active peak, by cause.
pub(crate) fn class_loss_chart(
    name: &str,
    program: &str,
    replay: &BuildReplay,
    top: usize,
) -> ClassLoss {
    let rows: Vec<_> = replay.classes_by_loss().into_iter().take(top).collect();
    let cause = |label: &str, pick: fn(&super::ClassRow) -> u64| {
        (label.to_string(), rows.iter().map(|c| pick(c)).collect())
    };
    ClassLoss {
        name: name.to_string(),
        title: format!(
            "{program}: size classes losing the most bytes, build {}",
            replay.build
        ),
        rows: rows.iter().map(|c| class_label(c.size)).collect(),
        causes: vec![
            cause("size-class rounding", |c| c.rounding_at_peak),
            cause("empty slab regions", |c| c.empty_regions_at_peak),
            cause("large padding page", |c| c.large_pad_at_peak),
        ],
    }
}

/// `48 B`, `20 KiB`, `1.25 MiB`: exact, short.
fn class_label(size: u64) -> String {
    if size >= 1 << 20 && size.is_multiple_of(1 << 18) {
        format!("{} MiB", size as f64 / (1u64 << 20) as f64)
    } else if size >= 1 << 10 && size.is_multiple_of(1 << 8) {
        format!("{} KiB", size as f64 / 1024.0)
    } else {
        format!("{size} B")
    }
}

/// Writes the three charts of a what-if run into `dir` (`<stem>-timeline`, `<stem>-whatif`,
/// `<stem>-class-loss`, PNG and SVG): the timeline and the classes of the first build, the
/// stacked bars of every build. Returns the paths written.
pub(crate) fn write_charts(
    dir: &std::path::Path,
    stem: &str,
    program: &str,
    replays: &[BuildReplay],
    top: usize,
) -> anyhow::Result<Vec<std::path::PathBuf>> {
    use crate::charts::write_chart;
    let Some(first) = replays.first() else {
        anyhow::bail!("no builds replayed");
    };
    let mut paths = write_chart(
        &timeline_chart(&format!("{stem}-timeline"), program, first),
        dir,
    )?;
    paths.extend(write_chart(
        &whatif_chart(&format!("{stem}-whatif"), program, replays),
        dir,
    )?);
    paths.extend(write_chart(
        &class_loss_chart(&format!("{stem}-class-loss"), program, first, top),
        dir,
    )?);
    Ok(paths)
}
