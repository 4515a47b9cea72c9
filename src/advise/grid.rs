//! The settings `fragsim advise` compares: the default grid of the issue, and grid files.
//!
//! # Grid file format
//!
//! One setting per line: a `MALLOC_CONF` string as jemalloc takes it (`k:v,k:v`), optionally
//! preceded by `preset=NAME` and white space (`preset=5.3.0 tcache:false`); `preset=NAME`
//! alone is that build's defaults. The preset is `5.3.1` (the linked jemalloc) when not given;
//! `5.3.0` (an alias of `default`) and every `--preset` name are accepted. Blank lines and
//! lines starting with `#` are skipped (a `#` later in a line starts a comment too). The
//! defaults row (5.3.1, empty `MALLOC_CONF`) is always run first, as the baseline of
//! every `*_change_pct`, whether or not the file lists it. A line naming `dirty_decay_ms`,
//! `muzzy_decay_ms` or `background_thread` runs the decay settings it leaves out at
//! jemalloc's defaults (see [`super`]); a line naming none of them runs decay off. A line that does not parse, or repeats an earlier setting, is
//! refused with its line number and its text.

use super::{Setting, SettingError};
use crate::sizeclass::Preset;

/// A bad line of a grid file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: '{value}': {reason}")]
pub struct GridError {
    /// 1-based.
    pub line: usize,
    /// The line's setting as written (comment and surrounding blanks removed).
    pub value: String,
    pub reason: String,
}

/// The grid of the issue, all on the linked 5.3.1 unless said: the defaults; no thread cache;
/// `tcache_max` 4 KiB and 64 KiB; fewer cache slots (`lg_tcache_nslots_mul` -1 and -2);
/// `narenas` 1, 2, 4 and 8 (the default, 4 x CPUs, is the defaults row); no huge arena
/// (`oversize_threshold:0`) and a 1 GiB threshold; and jemalloc 5.3.0 where the two
/// releases differ for these options: its defaults (its size classes, pairing heaps and
/// cache GC) and `tcache_max` 64 KiB, which 5.3.1 clips to 32 KiB and 5.3.0 honours; and
/// dirty decay over 10 s (jemalloc's own defaults: muzzy 0), 1 s, 100 ms and 0 (purge at
/// once), the last four only on a trace with times but `dirty_decay_ms:0` (no clock needed);
/// and background purging threads (`background_thread:true`, what servers turn on) with
/// jemalloc's decay defaults and with 1 s dirty decay, on a trace with times.
/// The defaults row keeps decay off: it is the exact baseline, live-checked exactly, on any
/// trace; `dirty_decay_ms:10000` is what the real allocator runs by default.
pub fn default_grid() -> Vec<Setting> {
    const LINES: [(&str, &str); 20] = [
        ("5.3.1", ""),
        ("5.3.1", "tcache:false"),
        ("5.3.1", "tcache_max:4096"),
        ("5.3.1", "tcache_max:65536"),
        ("5.3.1", "lg_tcache_nslots_mul:-1"),
        ("5.3.1", "lg_tcache_nslots_mul:-2"),
        ("5.3.1", "narenas:1"),
        ("5.3.1", "narenas:2"),
        ("5.3.1", "narenas:4"),
        ("5.3.1", "narenas:8"),
        ("5.3.1", "oversize_threshold:0"),
        ("5.3.1", "oversize_threshold:1073741824"),
        ("5.3.0", ""),
        ("5.3.0", "tcache_max:65536"),
        ("5.3.1", "dirty_decay_ms:10000"),
        ("5.3.1", "dirty_decay_ms:1000"),
        ("5.3.1", "dirty_decay_ms:100"),
        ("5.3.1", "dirty_decay_ms:0"),
        ("5.3.1", "background_thread:true"),
        ("5.3.1", "dirty_decay_ms:1000,background_thread:true"),
    ];
    LINES
        .iter()
        .map(|(preset, conf)| {
            let preset = preset_named(preset).expect("the default grid names known presets");
            Setting::new(conf, preset).expect("the default grid parses")
        })
        .collect()
}

/// The preset a grid line names: every `--preset` name, and `5.3.0` for `default`.
pub(crate) fn preset_named(name: &str) -> Result<Preset, String> {
    if name == "5.3.0" {
        return Ok(Preset::V5_3_0);
    }
    Preset::from_name(name).map_err(|_| {
        format!(
            "unknown preset '{name}' (known: 5.3.0, {})",
            Preset::names()
        )
    })
}

/// Parses a grid file's text (see the module documentation); the defaults row comes first.
pub fn parse_grid(text: &str) -> Result<Vec<Setting>, GridError> {
    let mut settings = vec![Setting::defaults()];
    // The line each setting came from (0: the implicit defaults row).
    let mut origin = vec![0usize];
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let refuse = |reason: String| GridError {
            line,
            value: body.to_string(),
            reason,
        };
        let (preset, conf) = match body.strip_prefix("preset=") {
            Some(rest) => {
                let (name, conf) = rest
                    .split_once(char::is_whitespace)
                    .map_or((rest, ""), |(n, c)| (n, c.trim()));
                (preset_named(name).map_err(refuse)?, conf)
            }
            None => (Preset::LINKED, body),
        };
        if conf.split_whitespace().count() > 1 {
            return Err(refuse(
                "one MALLOC_CONF per line, without spaces (k:v,k:v)".into(),
            ));
        }
        let setting =
            Setting::new(conf, preset).map_err(|e: SettingError| refuse(e.to_string()))?;
        if let Some(k) = settings.iter().position(|s| s.same_as(&setting)) {
            if origin[k] == 0 {
                // Listing the defaults is allowed: they are the first row anyway.
                continue;
            }
            return Err(refuse(format!("the same setting as line {}", origin[k])));
        }
        settings.push(setting);
        origin.push(line);
    }
    Ok(settings)
}

/// Decay options a rebased setting keeps its own (the defaults row stays decay off).
const DECAY_KEYS: [&str; 3] = ["dirty_decay_ms", "muzzy_decay_ms", "background_thread"];

/// The grid moved onto the allocator the recording says its program ran with: its build for
/// the settings on the linked one (the other release for those on 5.3.0), its options under
/// each setting's own (decay aside: the defaults row stays the exact, decay-off baseline;
/// `narenas` only when `keep_narenas`). `None` when the recorded build is no preset (its
/// live check needs a library of that build): the grid stays as it is. Also returns the
/// baseline's description for the notes.
pub fn rebase(
    settings: &[Setting],
    recorded: &crate::process::RecordedAllocator,
    keep_narenas: bool,
) -> Option<(Vec<Setting>, String)> {
    let config = recorded.config?;
    let base = Preset::ALL.into_iter().find(|p| p.config() == config)?;
    let other = match config.version {
        crate::sizeclass::JemallocVersion::V5_3_0 => Preset::V5_3_1,
        crate::sizeclass::JemallocVersion::V5_3_1 => Preset::V5_3_0,
    };
    let conf: Vec<&str> = recorded
        .malloc_conf
        .split(',')
        .filter(|kv| {
            let key = kv.split(':').next().unwrap_or("");
            !DECAY_KEYS.contains(&key) && (keep_narenas || key != "narenas")
        })
        .collect();
    let conf = conf.join(",");
    let rebased = settings
        .iter()
        .map(|s| {
            let preset = match s.preset {
                Preset::V5_3_1 => base,
                Preset::V5_3_0 => other,
                p => p,
            };
            let mut r = Setting::new(&format!("{conf},{}", s.malloc_conf), preset).ok()?;
            r.malloc_conf = s.malloc_conf.clone();
            Some(r)
        })
        .collect::<Option<Vec<_>>>()?;
    let version = recorded
        .version
        .split('-')
        .next()
        .unwrap_or(&recorded.version);
    // The build named only where it is not the release's own (`redis`, `quantum8`).
    let build = match base.name() == version {
        true => String::new(),
        false => format!(" ({} build)", base.name()),
    };
    let about = format!(
        "the recorded program's jemalloc {version}{build} with its options ({conf}), decay off"
    );
    Some((rebased, about))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_grid_has_every_setting_of_the_issue_once() {
        let grid = default_grid();
        assert_eq!(grid.len(), 20);
        assert!(grid[0].is_defaults());
        // Decay off but where a row names it; naming one gives jemalloc's default to the
        // other (muzzy 0; dirty 10 s).
        let decay: Vec<(i64, i64)> = grid
            .iter()
            .map(|s| (s.options.dirty_decay_ms, s.options.muzzy_decay_ms))
            .collect();
        assert_eq!(decay[..14], [(-1, -1); 14]);
        assert_eq!(
            decay[14..],
            [
                (10000, 0),
                (1000, 0),
                (100, 0),
                (0, 0),
                (10000, 0),
                (1000, 0)
            ]
        );
        let bg: Vec<bool> = grid.iter().map(|s| s.options.background_thread).collect();
        assert_eq!(bg.iter().filter(|&&b| b).count(), 2);
        assert!(bg[18] && bg[19]);
        assert_eq!(
            grid.iter().filter(|s| s.on_clock()).count(),
            5,
            "0 ms needs no clock"
        );
        for (i, a) in grid.iter().enumerate() {
            for b in &grid[i + 1..] {
                assert!(!a.same_as(b), "{} twice", a.label());
            }
        }
    }

    #[test]
    fn a_grid_file_takes_presets_comments_and_the_defaults() {
        let text =
            "# a comment\n\ntcache:false  # trailing\npreset=5.3.0\npreset=5.3.0 narenas:2\n\n";
        let grid = parse_grid(text).unwrap();
        let labels: Vec<String> = grid.iter().map(Setting::label).collect();
        assert_eq!(
            labels,
            [
                "5.3.1 defaults",
                "5.3.1 tcache:false",
                "5.3.0 defaults",
                "5.3.0 narenas:2"
            ]
        );
        // A decay line: what it names, jemalloc's default for the other.
        let d = parse_grid("dirty_decay_ms:1000\nmuzzy_decay_ms:5,dirty_decay_ms:-1\n").unwrap();
        assert_eq!(
            (d[1].options.dirty_decay_ms, d[1].options.muzzy_decay_ms),
            (1000, 0)
        );
        assert_eq!(
            (d[2].options.dirty_decay_ms, d[2].options.muzzy_decay_ms),
            (-1, 5)
        );
        assert!(d[1].on_clock() && d[2].on_clock() && !d[0].decays());
        // 5.3.1's clock GC asked for: kept, on the clock (the model runs it on the trace's
        // times), and given to the live child as asked.
        let g = parse_grid("experimental_tcache_gc:true\n").unwrap();
        assert!(g[1].clock_gc() && g[1].on_clock() && !g[1].decays());
        assert!(g[1].exact_conf(2).contains("experimental_tcache_gc:true"));
        assert!(!g[0].clock_gc() && g[0].exact_conf(2).contains("experimental_tcache_gc:false"));
        // Listing the defaults again is not a repeat.
        assert_eq!(parse_grid("preset=5.3.1\n").unwrap().len(), 1);
    }

    #[test]
    fn bad_lines_are_refused_with_their_number_and_text() {
        let cases = [
            (
                "tcache:false\ntcache:maybe\n",
                2,
                "tcache:maybe",
                "true or false",
            ),
            ("narenas:0", 1, "narenas:0", "1..=4094"),
            ("\n\nfoo:1", 3, "foo:1", "unknown option 'foo'"),
            (
                "preset=6.0 tcache:false",
                1,
                "preset=6.0 tcache:false",
                "unknown preset '6.0'",
            ),
            (
                "tcache:false\ntcache:false",
                2,
                "tcache:false",
                "same setting as line 1",
            ),
            (
                "dirty_decay_ms:soon",
                1,
                "dirty_decay_ms:soon",
                "milliseconds",
            ),
            ("muzzy_decay_ms:-2", 1, "muzzy_decay_ms:-2", "or -1 (never)"),
            (
                "dirty_decay_ms:10000\nmuzzy_decay_ms:0",
                2,
                "muzzy_decay_ms:0",
                "same setting as line 1",
            ),
            (
                "preset=5.3.0 experimental_tcache_gc:false",
                1,
                "preset=5.3.0 experimental_tcache_gc:false",
                "5.3.1 option",
            ),
            (
                "tcache:false narenas:1",
                1,
                "tcache:false narenas:1",
                "without spaces",
            ),
        ];
        for (text, line, value, reason) in cases {
            let e = parse_grid(text).unwrap_err();
            assert_eq!((e.line, e.value.as_str()), (line, value), "{text}");
            assert!(e.to_string().contains(reason), "{text}: {e}");
        }
    }
}
