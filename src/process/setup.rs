//! The build and options a trace is modelled with (`replay --process`, `--blame`, the
//! routing what-if, the page): the build asked for; else the allocator the recording says
//! its program ran with (its build, and its options under the ones asked for); else the
//! linked jemalloc's. 5.3.1's deterministic cache GC unless its clock-driven one is asked
//! for.

use super::{ProcessOptions, RecordedAllocator};
use crate::sizeclass::{AllocatorConfig, JemallocVersion};

/// What a trace is modelled with, and what a title says of it.
#[derive(Clone, Debug)]
pub struct ModelSetup {
    pub config: AllocatorConfig,
    pub options: ProcessOptions,
    /// For the title: where the build and options came from (empty: as asked).
    pub note: String,
    /// The recording's allocator, when the model runs its build.
    pub recorded: Option<RecordedAllocator>,
}

impl ModelSetup {
    /// `explicit`: the build asked for, if any; `recorded`: the trace's recorded-allocator
    /// line, if any; `linked`: the linked jemalloc's build (read only when needed);
    /// `malloc_conf`, parsed as `options`: the options asked for; `cpus_given`: the recorded
    /// `narenas` gives way to `--cpus`.
    pub fn for_trace(
        explicit: Option<AllocatorConfig>,
        recorded: Option<&str>,
        linked: impl FnOnce() -> anyhow::Result<AllocatorConfig>,
        malloc_conf: &str,
        options: &ProcessOptions,
        cpus_given: bool,
    ) -> anyhow::Result<ModelSetup> {
        let mut model_options = options.clone();
        let mut note = String::new();
        let recorded = match explicit {
            Some(_) => None,
            None => recorded.and_then(RecordedAllocator::parse),
        };
        let config = match (explicit, &recorded) {
            (Some(c), _) => c,
            (None, Some(r)) => match r.config {
                Some(c) => {
                    let conf = match cpus_given {
                        true => r.malloc_conf_without_narenas(),
                        false => r.malloc_conf.clone(),
                    };
                    model_options = ProcessOptions::parse(&format!("{conf},{malloc_conf}"))?;
                    note = format!(
                        " (the recorded program's jemalloc {}: {conf}; --preset or --malloc-conf to change)",
                        r.version.split('-').next().unwrap_or(&r.version)
                    );
                    c
                }
                None => {
                    note = format!(
                        " (the recorded program ran jemalloc {}, which fragsim does not model: the linked build instead)",
                        r.version
                    );
                    linked()?
                }
            },
            (None, None) => linked()?,
        };
        if config.version == JemallocVersion::V5_3_1
            && model_options.experimental_tcache_gc.is_none()
        {
            // Unless asked for, the deterministic GC; asked for, the clock-driven one runs on
            // the trace's times (process/model/gc.rs), as jemalloc's own default.
            model_options.experimental_tcache_gc = Some(false);
            note += " (5.3.1's deterministic cache GC, experimental_tcache_gc:false; give experimental_tcache_gc:true for its clock-driven default on the trace's times)";
        }
        Ok(ModelSetup {
            config,
            options: model_options,
            note,
            recorded: recorded.filter(|r| r.config.is_some()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizeclass::Preset;

    /// Hand-derived cases: the order of precedence the doc states, and what each adds.
    #[test]
    fn the_build_asked_for_then_the_recorded_one_then_the_linked_one() {
        let none = ProcessOptions::default();
        let debian = "version 5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c\narenas.quantum 16\narenas.page 4096\nopt.narenas 3\nopt.dirty_decay_ms 0\n";
        let refuse = || -> anyhow::Result<AllocatorConfig> { anyhow::bail!("linked read") };
        // Asked for: the recording is not read, nor the linked build.
        let v530 = Preset::V5_3_0.config();
        let s = ModelSetup::for_trace(Some(v530), Some(debian), refuse, "", &none, false).unwrap();
        assert_eq!((s.config, s.note.as_str()), (v530, ""));
        assert!(s.recorded.is_none());
        // The recording's build and options, `--cpus` taking `narenas`'s place.
        let s = ModelSetup::for_trace(None, Some(debian), refuse, "", &none, false).unwrap();
        assert_eq!(s.config, v530);
        assert_eq!(s.options.narenas, Some(3));
        assert!(
            s.note.contains("the recorded program's jemalloc 5.3.0"),
            "{}",
            s.note
        );
        assert!(s.recorded.is_some());
        let s = ModelSetup::for_trace(None, Some(debian), refuse, "", &none, true).unwrap();
        assert_eq!(s.options.narenas, None);
        // A release fragsim does not model: the linked build, said so.
        let old = "version 5.2.1-0-gea6b3e97\narenas.quantum 16\narenas.page 4096\n";
        let v531 = Preset::V5_3_1.config();
        let s = ModelSetup::for_trace(None, Some(old), || Ok(v531), "", &none, false).unwrap();
        assert_eq!(s.config, v531);
        assert!(s.note.contains("does not model"), "{}", s.note);
        // 5.3.1: the deterministic cache GC unless the clock's is asked for.
        assert_eq!(s.options.experimental_tcache_gc, Some(false));
        let gc = ProcessOptions::parse("experimental_tcache_gc:true").unwrap();
        let s = ModelSetup::for_trace(Some(v531), None, refuse, "", &gc, false).unwrap();
        assert_eq!(s.options.experimental_tcache_gc, Some(true));
        // No recording, nothing asked: the linked build's reading is the one error.
        let e = ModelSetup::for_trace(None, None, refuse, "", &none, false).unwrap_err();
        assert_eq!(e.to_string(), "linked read");
    }
}
