//! The terms fragsim's tables use that a reader may not know, each defined once here: a
//! Markdown table ends with the definitions of those its columns, title or cells use
//! ([`terms_in`]), so every output defines its terms where they first appear.

/// (term, how it shows in a table, definition). A term shows in a column name or title
/// word containing its key, or, for build labels, in a `q<N>-p<N>` word.
const TERMS: &[(&str, Key, &str)] = &[
    (
        "requested",
        Key::Nowhere,
        "the bytes the program asked for",
    ),
    (
        "rounding",
        Key::Column("rounding"),
        "usable minus requested bytes: what the size class adds to each request",
    ),
    (
        "empty regions",
        Key::Column("empty_region"),
        "free regions of the slabs a line holds regions in (and the slabs' unused tails), shared among the holders of each slab's used regions",
    ),
    (
        "held",
        Key::Column("held_bytes"),
        "usable bytes of objects kept in thread caches, the caches' own blocks, large blocks' padding pages",
    ),
    (
        "pinned",
        Key::Column("pinned"),
        "bytes of the slabs whose used regions all belong to the line: what its frees would give back (a second view, not part of charged)",
    ),
    (
        "charged",
        Key::Column("charged"),
        "the active bytes charged to the line: requested + rounding + empty regions + held; the lines add up to the model's active bytes",
    ),
    (
        "waste",
        Key::Column("waste"),
        "charged minus requested bytes",
    ),
    (
        "resident",
        Key::Nowhere,
        "stats.resident: active pages, dirty pages not yet purged, and jemalloc's metadata",
    ),
    (
        "q16-p4096",
        Key::BuildLabel,
        "a build's label: quantum 16 bytes, page 4096 bytes; -g<N>: N classes per size doubling; -nco: no cache-oblivious padding page; -lpages: large sizes rounded to whole pages; -v5.3.1: that release's rules",
    ),
];

#[derive(Clone, Copy)]
enum Key {
    /// A column whose name contains this.
    Column(&'static str),
    /// A `q<N>-p<N>` word in the title or a text cell.
    BuildLabel,
    /// A term of tables everyone reads the same way: defined only where asked for by name
    /// ([`definitions_of`]: the page's legend).
    Nowhere,
}

/// Whether `text` holds a build label, `q<digits>-p<digits>`.
fn has_build_label(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | '`' | ':'))
        .any(|word| {
            let Some(rest) = word.strip_prefix('q') else {
                return false;
            };
            let Some((q, p)) = rest.split_once("-p") else {
                return false;
            };
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            digits(q) && digits(p.split('-').next().unwrap_or(""))
        })
}

/// The (term, definition) pairs of the terms a table with these `columns`, `title` and text
/// cells uses, in [`TERMS`]' order.
pub(crate) fn terms_in<'t>(
    columns: &[String],
    title: &str,
    texts: impl Iterator<Item = &'t str>,
) -> Vec<(&'static str, &'static str)> {
    let mut label = has_build_label(title);
    if !label {
        label = texts.into_iter().any(has_build_label);
    }
    TERMS
        .iter()
        .filter(|(_, key, _)| match key {
            Key::Column(k) => columns.iter().any(|c| c.contains(k)),
            Key::BuildLabel => label,
            Key::Nowhere => false,
        })
        .map(|&(term, _, definition)| (term, definition))
        .collect()
}

/// The definitions of `terms`, by name, in that order (a name not defined here is left out).
pub fn definitions_of(terms: &[&str]) -> Vec<(&'static str, &'static str)> {
    terms
        .iter()
        .filter_map(|t| TERMS.iter().find(|(term, _, _)| term == t))
        .map(|&(term, _, definition)| (term, definition))
        .collect()
}

/// The line a table's definition of `term` takes under it.
fn definition_line(term: &str, definition: &str) -> String {
    format!("- *{term}*: {definition}")
}

/// The definitions [`terms_in`] gives, as the lines a Markdown table ends with.
pub(crate) fn definition_lines(terms: &[(&str, &str)]) -> String {
    terms
        .iter()
        .map(|(t, d)| definition_line(t, d) + "\n")
        .collect()
}

/// A document of several tables with each term defined once, under the first table that
/// uses it: later tables' definitions of the same terms left out (a block of them all
/// left out takes its blank line with it).
pub fn define_once(doc: &str) -> String {
    let known: std::collections::HashSet<String> = TERMS
        .iter()
        .map(|(t, _, d)| definition_line(t, d))
        .collect();
    let lines: Vec<&str> = doc.split_inclusive('\n').collect();
    let mut seen = std::collections::HashSet::new();
    let mut keep = vec![true; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        let is_def = |l: &str| known.contains(l.trim_end_matches('\n'));
        if !is_def(lines[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && is_def(lines[i]) {
            keep[i] = seen.insert(lines[i].trim_end_matches('\n'));
            i += 1;
        }
        if !keep[start..i].iter().any(|&k| k) && start > 0 && lines[start - 1] == "\n" {
            keep[start - 1] = false;
        }
    }
    lines
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(l, _)| *l)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_blame_table_defines_its_columns_and_nothing_else() {
        let c = cols(&[
            "site",
            "requested_bytes",
            "rounding_bytes",
            "pinned_bytes",
            "held_bytes",
            "charged_bytes",
        ]);
        let terms: Vec<&str> = terms_in(&c, "blame", std::iter::empty())
            .iter()
            .map(|t| t.0)
            .collect();
        assert_eq!(terms, ["rounding", "held", "pinned", "charged"]);
    }

    #[test]
    fn a_document_defines_each_term_once() {
        let c = cols(&["rounding_bytes", "held_bytes"]);
        let table = |title: &str| {
            let terms = terms_in(&c, title, std::iter::empty());
            format!("### {title}\n\n| a |\n\n{}", definition_lines(&terms))
        };
        let only_rounding = definition_lines(&terms_in(
            &cols(&["rounding_bytes"]),
            "",
            std::iter::empty(),
        ));
        let doc = format!(
            "{}\n{}\ntext\n\n| b |\n\n{only_rounding}",
            table("one"),
            table("two")
        );
        let once = define_once(&doc);
        assert_eq!(once.matches("- *rounding*").count(), 1, "{once}");
        assert_eq!(once.matches("- *held*").count(), 1, "{once}");
        assert!(once.ends_with("| b |\n"), "{once:?}");
        assert!(once.contains("### two\n\n| a |\n\ntext"), "{once:?}");
    }

    #[test]
    fn terms_by_name_only_where_asked_for() {
        let named = definitions_of(&["requested", "held", "no such term"]);
        assert_eq!(
            named.iter().map(|t| t.0).collect::<Vec<_>>(),
            ["requested", "held"]
        );
        // `requested` is in every table: never defined under one.
        let c = cols(&["requested_bytes"]);
        assert!(terms_in(&c, "", std::iter::empty()).is_empty());
    }

    #[test]
    fn build_labels_are_words_of_their_own_shape() {
        assert!(has_build_label("model q16-p4096-lpages-v5.3.1 against"));
        assert!(has_build_label("(q8-p65536)"));
        assert!(!has_build_label("frequency-p4096"));
        assert!(!has_build_label("q16-page"));
        assert!(terms_in(&[], "jemalloc 5.3.1", ["q16-p4096"].into_iter()).len() == 1);
    }
}
