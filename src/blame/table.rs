//! A blame as a table (the top sites, the allocator's own lines, a total) and as folded
//! stacks (inferno's and Brendan Gregg's `frame;frame;frame value` lines, outermost first).

use super::{Blame, Charge, Line};
use crate::export::profile::StackProfile;
use crate::export::{Cell, Table};

/// The columns of [`blame_table`].
pub const BLAME_COLUMNS: [&str; 10] = [
    "site",
    "frames",
    "objects",
    "requested_bytes",
    "rounding_bytes",
    "empty_region_bytes",
    "pinned_bytes",
    "held_bytes",
    "charged_bytes",
    "waste_bytes",
];

fn row(site: String, frames: String, l: &Line) -> Vec<Cell> {
    vec![
        site.into(),
        frames.into(),
        l.objects.into(),
        l.requested_bytes.into(),
        l.rounding_bytes.into(),
        l.empty_region_bytes.into(),
        l.pinned_bytes.into(),
        l.held_bytes.into(),
        l.charged_bytes().into(),
        l.waste_bytes().into(),
    ]
}

/// The `top` code lines by waste (sites, or size classes for a trace without sites), the
/// rest summed as `[other sites]`, then the allocator's own lines (thread caches, cache
/// blocks, large padding; unattributed only when not zero), then `total`, whose charged
/// bytes are the model's active bytes.
pub fn blame_table(blame: &Blame, top: usize, title: String) -> Table {
    blame_table_with(blame, top, title, None)
}

/// The frames a Markdown blame table shows per site (`replay --blame --depth`'s default).
pub const TABLE_DEPTH: usize = 4;

/// [`blame_table`] with each site's frames cut to its first `depth` of the program's own
/// ([`Blame::short_frames`]) when given: Markdown and the terminal read that; CSV and JSON
/// keep the whole stack.
pub fn blame_table_with(blame: &Blame, top: usize, title: String, depth: Option<usize>) -> Table {
    let frames = |key: Charge| match depth {
        Some(d) => blame.short_frames(key, d),
        None => blame.frames(key),
    };
    let mut t = Table::new(title, &BLAME_COLUMNS);
    let code: Vec<&(Charge, Line)> = blame.lines.iter().filter(|(k, _)| k.is_code()).collect();
    for (key, line) in code.iter().take(top) {
        t.push(row(blame.label(*key), frames(*key), line));
    }
    if code.len() > top {
        let mut rest = Line::default();
        for (_, l) in &code[top..] {
            rest.add(l);
        }
        let what = if blame.by_class { "classes" } else { "sites" };
        t.push(row(
            format!("[other {what}: {}]", code.len() - top),
            String::new(),
            &rest,
        ));
    }
    for key in [
        Charge::ThreadCaches,
        Charge::CacheBlocks,
        Charge::LargePadding,
        Charge::Unattributed,
    ] {
        let line = blame
            .lines
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, l)| *l)
            .unwrap_or_default();
        if key != Charge::Unattributed || line.charged_bytes() > 0 {
            t.push(row(blame.label(key), String::new(), &line));
        }
    }
    t.push(row("total".into(), String::new(), &blame.total()));
    t
}

/// A line's stack, outermost first: a site's frames reversed (demangled), else `site N`,
/// `class N` or the bracketed name of the allocator's own lines.
fn stack_of(blame: &Blame, key: Charge) -> Vec<String> {
    match key {
        Charge::Site(s) => match blame.sites.get(s) {
            Some(frames) if !frames.is_empty() => frames
                .iter()
                .rev()
                .map(|f| folded_frame(&super::demangle::function(f)))
                .collect(),
            _ => vec![format!("site {s}")],
        },
        _ => vec![blame.label(key)],
    }
}

/// One folded line per line with waste: its stack outermost first (a site's frames reversed) and its
/// waste bytes. The values add up to active minus requested bytes.
pub fn folded_lines(blame: &Blame) -> Vec<String> {
    blame
        .lines
        .iter()
        .filter(|(_, l)| l.waste_bytes() > 0)
        .map(|(key, l)| format!("{} {}", stack_of(blame, *key).join(";"), l.waste_bytes()))
        .collect()
}

/// The kinds of [`waste_profile`], in order: waste first (the one shown first), then the
/// parts of the blame table's columns.
pub const PROFILE_KINDS: [(&str, &str); 7] = [
    ("waste", "bytes"),
    ("requested", "bytes"),
    ("rounding", "bytes"),
    ("empty_regions", "bytes"),
    ("pinned", "bytes"),
    ("held", "bytes"),
    ("objects", "count"),
];

/// Every line with bytes charged as a stack with its values of [`PROFILE_KINDS`] (for pprof
/// and speedscope): the same figures as [`blame_table`]'s rows, every line kept.
pub fn waste_profile(blame: &Blame, name: &str) -> StackProfile {
    StackProfile {
        name: name.to_string(),
        kinds: PROFILE_KINDS
            .iter()
            .map(|&(k, u)| (k.to_string(), u.to_string()))
            .collect(),
        default_kind: 0,
        stacks: blame
            .lines
            .iter()
            .filter(|(_, l)| l.charged_bytes() > 0 || l.pinned_bytes > 0)
            .map(|(key, l)| {
                (
                    stack_of(blame, *key),
                    vec![
                        l.waste_bytes(),
                        l.requested_bytes,
                        l.rounding_bytes,
                        l.empty_region_bytes,
                        l.pinned_bytes,
                        l.held_bytes,
                        l.objects,
                    ],
                )
            })
            .collect(),
    }
}

/// Frames never hold `;` or line breaks (the trace refuses them); an empty one would merge
/// with its neighbour, so it is named.
fn folded_frame(frame: &str) -> String {
    if frame.is_empty() {
        "[unknown]".into()
    } else {
        frame.to_string()
    }
}

/// The answer first: active bytes, how much of them is waste and of which kind, and the line
/// with the most waste (`1,376,256 active bytes, 394,968 of them waste (28.7%: rounding
/// 104,220, empty regions 28,928, held 261,820); the most, 143,360, in [cache blocks]`).
pub fn headline(blame: &Blame) -> String {
    use crate::export::human::thousands;
    let total = blame.total();
    let waste = total.waste_bytes();
    let share = match total.charged_bytes() {
        0 => 0.0,
        c => waste as f64 * 100.0 / c as f64,
    };
    let mut text = format!(
        "{} active bytes, {} of them waste ({share:.1}%: rounding {}, empty regions {}, held {})",
        thousands(blame.active_bytes),
        thousands(waste),
        thousands(total.rounding_bytes),
        thousands(total.empty_region_bytes),
        thousands(total.held_bytes),
    );
    let worst = blame
        .lines
        .iter()
        .filter(|(_, l)| l.waste_bytes() > 0)
        .max_by_key(|(_, l)| l.waste_bytes());
    if let Some((key, line)) = worst {
        let name = match blame.frames(*key) {
            f if f.is_empty() => blame.label(*key),
            f => format!("site {} ({})", blame.label(*key), f),
        };
        text.push_str(&format!(
            "; the most, {}, in {name}",
            thousands(line.waste_bytes())
        ));
    }
    text
}
