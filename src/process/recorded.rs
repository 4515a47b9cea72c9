//! The allocator a recording says its program ran with ([`crate::trace::TraceMeta::allocator`]:
//! the recorder reads the program's jemalloc through its own `mallctl` when the recording
//! ends), as the build and the `MALLOC_CONF` the process model runs by default.

use crate::sizeclass::{AllocatorConfig, JemallocVersion};

/// The program's jemalloc as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedAllocator {
    /// jemalloc's `version` string.
    pub version: String,
    /// The build (`arenas.quantum`, `arenas.page`, `opt.cache_oblivious`, 5.3.1's
    /// `opt.disable_large_size_classes`); `None` for a release fragsim does not model.
    pub config: Option<AllocatorConfig>,
    /// Its options as a `MALLOC_CONF` (`narenas`, the cache, decay, background threads, the
    /// huge arena's threshold). 5.3.1's clock-driven cache GC is left out: the model's
    /// default is the deterministic one, exact (`experimental_tcache_gc` says which ran).
    pub malloc_conf: String,
}

/// Options carried over, as `MALLOC_CONF` keys, by the line that holds them. Background
/// threads: the setting at start (`opt.background_thread`; a write at run time is in the
/// trace as a control), else, from recorders before it, the setting at the end.
const OPTIONS: [(&str, &str); 9] = [
    ("opt.narenas", "narenas"),
    ("opt.tcache", "tcache"),
    ("opt.tcache_max", "tcache_max"),
    ("opt.dirty_decay_ms", "dirty_decay_ms"),
    ("opt.muzzy_decay_ms", "muzzy_decay_ms"),
    ("background_thread", "background_thread"),
    ("opt.max_background_threads", "max_background_threads"),
    ("opt.oversize_threshold", "oversize_threshold"),
    ("opt.lg_tcache_nslots_mul", "lg_tcache_nslots_mul"),
];

impl RecordedAllocator {
    /// Reads the recorded `key value` lines (`None` without a `version`).
    pub fn parse(text: &str) -> Option<RecordedAllocator> {
        let value = |key: &str| {
            text.lines()
                .filter_map(|l| l.split_once(' '))
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.trim())
        };
        let version = value("version")?.to_string();
        let number = |key: &str| value(key).and_then(|v| v.parse::<u64>().ok());
        let config = (|| {
            let quantum = number("arenas.quantum")?;
            let page = number("arenas.page")?;
            if !quantum.is_power_of_two() || !page.is_power_of_two() {
                return None;
            }
            let mut c =
                AllocatorConfig::new(quantum.trailing_zeros(), page.trailing_zeros(), 2).ok()?;
            c.version = JemallocVersion::from_version_string(&version)?;
            c.cache_oblivious = value("opt.cache_oblivious") != Some("false");
            c.large_page_rounding = value("opt.disable_large_size_classes") == Some("true");
            Some(c)
        })();
        let malloc_conf = OPTIONS
            .iter()
            .filter_map(|(line, key)| {
                let v = match *line {
                    "background_thread" => value("opt.background_thread").or(value(line)),
                    _ => value(line),
                };
                v.map(|v| format!("{key}:{v}"))
            })
            .collect::<Vec<_>>()
            .join(",");
        Some(RecordedAllocator {
            version,
            config,
            malloc_conf,
        })
    }

    /// [`RecordedAllocator::malloc_conf`] without `narenas` (when the user sets the CPUs).
    pub(crate) fn malloc_conf_without_narenas(&self) -> String {
        self.malloc_conf
            .split(',')
            .filter(|kv| !kv.starts_with("narenas:"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Debian's jemalloc 5.3.0 reported under `MALLOC_CONF=narenas:3,dirty_decay_ms:-1`
    /// (a recording's lines, copied).
    const DEBIAN: &str = "version 5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c\narenas.quantum 16\narenas.page 4096\nopt.cache_oblivious true\nopt.narenas 3\nopt.tcache true\nopt.tcache_max 32768\nopt.dirty_decay_ms -1\nopt.muzzy_decay_ms 0\nbackground_thread false\nopt.max_background_threads 4\nopt.oversize_threshold 8388608\nopt.lg_tcache_nslots_mul 1\n";

    #[test]
    fn a_recorded_debian_jemalloc_is_the_5_3_0_preset_with_its_options() {
        let r = RecordedAllocator::parse(DEBIAN).unwrap();
        assert_eq!(r.config, Some(crate::sizeclass::Preset::V5_3_0.config()));
        assert_eq!(
            r.malloc_conf,
            "narenas:3,tcache:true,tcache_max:32768,dirty_decay_ms:-1,muzzy_decay_ms:0,background_thread:false,max_background_threads:4,oversize_threshold:8388608,lg_tcache_nslots_mul:1"
        );
        crate::process::ProcessOptions::parse(&r.malloc_conf).unwrap();
        assert!(!r.malloc_conf_without_narenas().contains("narenas:3"));
        let other = RecordedAllocator::parse(
            "version 5.2.1-0-gea6b3e97\narenas.quantum 16\narenas.page 4096\n",
        )
        .unwrap();
        assert_eq!(other.config, None);
        assert_eq!(RecordedAllocator::parse("arenas.quantum 16\n"), None);
    }
}
