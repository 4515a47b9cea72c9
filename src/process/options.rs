//! The run-time options of a modelled process, parsed from a `MALLOC_CONF`-style string
//! (`k:v,k:v`), with jemalloc's defaults and bounds (`src/jemalloc.c` / `src/conf.c`,
//! `malloc_conf_init_helper`; `src/tcache.c` for the defaults).

use crate::sizeclass::JemallocVersion;

/// The options the process model honours; everything else is an error.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ProcessOptions {
    /// `opt.tcache`: thread caches on (default true).
    pub tcache: bool,
    /// `opt.tcache_max`: the largest cached size (default 32 KiB; jemalloc clips it to
    /// `TCACHE_MAXCLASS_LIMIT`, see [`ProcessOptions::tcache_max_for`]).
    pub tcache_max: u64,
    /// `opt.lg_tcache_nslots_mul` (default 1: slots = 2 x regions per slab), -16..=16.
    pub lg_tcache_nslots_mul: i32,
    /// `opt.tcache_nslots_small_min` / `_max` / `tcache_nslots_large` (20, 200, 20), 1..=2048.
    pub tcache_nslots_small_min: u32,
    pub tcache_nslots_small_max: u32,
    pub tcache_nslots_large: u32,
    /// `opt.narenas`; `None`: 4 x CPUs (1 on one CPU).
    pub narenas: Option<u32>,
    /// `opt.oversize_threshold` (default 8 MiB; 0 turns the huge arena off).
    pub oversize_threshold: u64,
    /// `opt.experimental_tcache_gc` (5.3.1 only; its default there is true).
    pub experimental_tcache_gc: Option<bool>,
    /// `opt.dirty_decay_ms`: -1 never purge, 0 purge at once, else over that many ms. The
    /// model's default is -1 (decay off, deterministic), not jemalloc's 10,000: write
    /// `dirty_decay_ms:10000` for jemalloc's own default. Decay above 0 needs a trace with
    /// times (the model runs it on the trace's clock).
    pub dirty_decay_ms: i64,
    /// `opt.muzzy_decay_ms` (jemalloc's default 0; the model's -1, as above).
    pub muzzy_decay_ms: i64,
    /// `opt.background_thread` (default false): purging threads on the trace's clock
    /// (`model/background.rs`); application threads then purge nothing but decay-0 sets.
    pub background_thread: bool,
    /// `max_background_threads` after `background_thread_boot1`'s clamp (default 4): arena
    /// `i` is served by thread `i % max_background_threads`.
    pub max_background_threads: u32,
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            tcache: true,
            tcache_max: 32 << 10,
            lg_tcache_nslots_mul: 1,
            tcache_nslots_small_min: 20,
            tcache_nslots_small_max: 200,
            tcache_nslots_large: 20,
            narenas: None,
            oversize_threshold: 8 << 20,
            experimental_tcache_gc: None,
            dirty_decay_ms: -1,
            muzzy_decay_ms: -1,
            background_thread: false,
            max_background_threads: DEFAULT_BACKGROUND_THREADS,
        }
    }
}

/// `DEFAULT_NUM_BACKGROUND_THREAD`: what `opt.max_background_threads` becomes unless set
/// below `MAX_BACKGROUND_THREAD_LIMIT + 1` (4,096).
pub(crate) const DEFAULT_BACKGROUND_THREADS: u32 = 4;

/// The background threads' error measured against live jemalloc (scripts/background-live.sh).
pub(crate) const BACKGROUND_MEASURED: &str = "a real thread purged 0.13-5.6 ms after the time its rules give on a 2 s schedule (15 trials, examples/background_wake.rs); against 5 live runs of 6 timed traces on the replay's own clock, resident was within 0.3-3.4% of the real mean on average (at most 4-46% at single checkpoints, where a purge falls on the other side of one) and inside the real runs' min-max band at 182-201 of about 200 checkpoints (scripts/background-live.sh)";

/// The options [`ProcessOptions::parse`] knows, in the order its error lists them.
pub(crate) const OPTION_NAMES: [&str; 13] = [
    "tcache",
    "tcache_max",
    "lg_tcache_nslots_mul",
    "tcache_nslots_small_min",
    "tcache_nslots_small_max",
    "tcache_nslots_large",
    "narenas",
    "oversize_threshold",
    "dirty_decay_ms",
    "muzzy_decay_ms",
    "experimental_tcache_gc",
    "background_thread",
    "max_background_threads",
];

/// A bad option string: each names the option (and the value) at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("unknown option '{name}' (known: {known})", name = .0, known = OPTION_NAMES.join(", "))]
    Unknown(String),
    #[error("option '{0}' has no value (write {0}:VALUE)")]
    NoValue(String),
    #[error("option '{name}': bad value '{value}' ({expected})")]
    BadValue {
        name: String,
        value: String,
        expected: &'static str,
    },
    #[error("option '{name}:{value}' is not modelled yet ({why})")]
    Unsupported {
        name: String,
        value: String,
        why: &'static str,
    },
}

fn bad(name: &str, value: &str, expected: &'static str) -> OptionError {
    OptionError::BadValue {
        name: name.into(),
        value: value.into(),
        expected,
    }
}

fn boolean(name: &str, v: &str) -> Result<bool, OptionError> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(name, v, "true or false")),
    }
}

fn number<T: std::str::FromStr + PartialOrd + Copy>(
    name: &str,
    v: &str,
    lo: T,
    hi: T,
    expected: &'static str,
) -> Result<T, OptionError> {
    match v.parse::<T>() {
        Ok(n) if n >= lo && n <= hi => Ok(n),
        _ => Err(bad(name, v, expected)),
    }
}

impl ProcessOptions {
    /// Parses `k:v,k:v` (empty string: the defaults). Later pairs override earlier ones.
    pub fn parse(text: &str) -> Result<ProcessOptions, OptionError> {
        let mut o = ProcessOptions::default();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once(':')
                .ok_or_else(|| OptionError::NoValue(pair.to_string()))?;
            match k {
                "tcache" => o.tcache = boolean(k, v)?,
                "tcache_max" => o.tcache_max = number(k, v, 0, u64::MAX, "a byte count")?,
                "lg_tcache_nslots_mul" => {
                    o.lg_tcache_nslots_mul = number(k, v, -16, 16, "an integer in -16..=16")?
                }
                "tcache_nslots_small_min" => {
                    o.tcache_nslots_small_min = number(k, v, 1, 2048, "1..=2048")?
                }
                "tcache_nslots_small_max" => {
                    o.tcache_nslots_small_max = number(k, v, 1, 2048, "1..=2048")?
                }
                "tcache_nslots_large" => o.tcache_nslots_large = number(k, v, 1, 2048, "1..=2048")?,
                "narenas" => o.narenas = Some(number(k, v, 1, 4094, "1..=4094")?),
                "oversize_threshold" => {
                    o.oversize_threshold = number(k, v, 0, u64::MAX, "a byte count")?
                }
                "dirty_decay_ms" | "muzzy_decay_ms" => {
                    // decay_ms_valid: -1, or 0 ..= NSTIME_SEC_MAX (18,446,744,072 s) x 1000.
                    let ms: i64 = number(
                        k,
                        v,
                        -1,
                        18_446_744_072_000,
                        "milliseconds (0 purges at once), or -1 (never)",
                    )?;
                    if k == "dirty_decay_ms" {
                        o.dirty_decay_ms = ms;
                    } else {
                        o.muzzy_decay_ms = ms;
                    }
                }
                "experimental_tcache_gc" => o.experimental_tcache_gc = Some(boolean(k, v)?),
                "background_thread" => o.background_thread = boolean(k, v)?,
                "max_background_threads" => {
                    // conf.c clips to 1..=4096, then background_thread_boot1 turns anything
                    // above MAX_BACKGROUND_THREAD_LIMIT (4,095) into the default 4.
                    let n: u64 = number(k, v, 0, u64::MAX, "a thread count")?;
                    o.max_background_threads = match n {
                        0 => 1,
                        1..=4095 => n as u32,
                        _ => DEFAULT_BACKGROUND_THREADS,
                    };
                }
                _ => return Err(OptionError::Unknown(k.to_string())),
            }
        }
        Ok(o)
    }

    /// The options as a `MALLOC_CONF` string for a live child (only what differs from the
    /// defaults, plus both decay settings, which the model's defaults turn off), for `version`.
    pub fn to_conf(&self, version: JemallocVersion) -> String {
        let d = ProcessOptions::default();
        let mut parts = Vec::new();
        if self.tcache != d.tcache {
            parts.push(format!("tcache:{}", self.tcache));
        }
        if self.tcache_max != d.tcache_max {
            parts.push(format!("tcache_max:{}", self.tcache_max));
        }
        if self.lg_tcache_nslots_mul != d.lg_tcache_nslots_mul {
            parts.push(format!(
                "lg_tcache_nslots_mul:{}",
                self.lg_tcache_nslots_mul
            ));
        }
        for (name, v, dv) in [
            (
                "tcache_nslots_small_min",
                self.tcache_nslots_small_min,
                d.tcache_nslots_small_min,
            ),
            (
                "tcache_nslots_small_max",
                self.tcache_nslots_small_max,
                d.tcache_nslots_small_max,
            ),
            (
                "tcache_nslots_large",
                self.tcache_nslots_large,
                d.tcache_nslots_large,
            ),
        ] {
            if v != dv {
                parts.push(format!("{name}:{v}"));
            }
        }
        if let Some(n) = self.narenas {
            parts.push(format!("narenas:{n}"));
        }
        if self.oversize_threshold != d.oversize_threshold {
            parts.push(format!("oversize_threshold:{}", self.oversize_threshold));
        }
        if version == JemallocVersion::V5_3_1 {
            // Unless asked for, the one deterministic cache GC (the experimental one, 5.3.1's
            // own default, reads the clock); asked for, the child runs it as given.
            let gc = self.experimental_tcache_gc.unwrap_or(false);
            parts.push(format!("experimental_tcache_gc:{gc}"));
        }
        parts.push(format!("dirty_decay_ms:{}", self.dirty_decay_ms));
        parts.push(format!("muzzy_decay_ms:{}", self.muzzy_decay_ms));
        if self.background_thread {
            parts.push("background_thread:true".to_string());
        }
        if self.max_background_threads != d.max_background_threads {
            parts.push(format!(
                "max_background_threads:{}",
                self.max_background_threads
            ));
        }
        parts.join(",")
    }

    /// `tcache_maxclass` before rounding: `opt.tcache_max` clipped to the release's limit
    /// (`TCACHE_MAXCLASS_LIMIT`: 8 MiB in 5.3.0; `USIZE_GROW_SLOW_THRESHOLD`, 32 KiB with
    /// 4 KiB pages, in 5.3.1).
    pub fn tcache_max_for(&self, version: JemallocVersion, lg_page: u32) -> u64 {
        let limit = match version {
            JemallocVersion::V5_3_0 => 1u64 << 23,
            JemallocVersion::V5_3_1 => 1u64 << (2 + lg_page + 1),
        };
        self.tcache_max.min(limit)
    }

    /// Whether decay runs on a clock (either setting above 0): the trace needs times.
    pub fn needs_clock(&self) -> bool {
        self.dirty_decay_ms > 0 || self.muzzy_decay_ms > 0
    }

    /// `arena_create_huge_arena`: without background threads a setting above 0 becomes 0
    /// for the huge arena (purge at once); 0 and -1 stay. With them it keeps the settings
    /// ("the purging delay is bounded").
    pub fn huge_decay_ms(&self) -> (i64, i64) {
        let bg = self.background_thread;
        let f = |ms: i64| if ms > 0 && !bg { 0 } else { ms };
        (f(self.dirty_decay_ms), f(self.muzzy_decay_ms))
    }

    /// What a summary says when background threads are modelled: how many, and that their
    /// wake-up times are approximate, with the error measured against live runs.
    pub(crate) fn background_note(&self) -> Option<String> {
        self.background_thread.then(|| {
            format!(
                "{} threads, arena i served by thread i % {0}; modelled on the trace's clock, \
                 their wake-up times are approximate (the real threads sleep on the wall clock \
                 and wake late by scheduling): {BACKGROUND_MEASURED}",
                self.max_background_threads
            )
        })
    }

    /// `malloc_narenas_default`: 4 x CPUs, 1 on one CPU; capped at `MAX_AUTO_ARENAS` as
    /// `malloc_init_narenas` caps it ("Reducing narenas to limit").
    pub fn narenas_for(&self, cpus: u32) -> u32 {
        self.narenas
            .unwrap_or(if cpus > 1 { cpus.saturating_mul(4) } else { 1 })
            .min(MAX_AUTO_ARENAS)
    }
}

/// jemalloc's cap on automatic arenas: `MALLOCX_ARENA_LIMIT - 1` (`malloc_init_narenas`).
pub(crate) const MAX_AUTO_ARENAS: u32 = 4094;

/// The most CPUs a model is given: at 4 arenas a CPU, 1,024 CPUs already reach jemalloc's cap
/// on automatic arenas, so more would change nothing but the time a typo costs.
pub const MAX_CPUS: u32 = 1024;

/// A CPU count for the default `narenas`: 1..=`MAX_CPUS`.
pub fn check_cpus(cpus: u32) -> Result<u32, String> {
    if (1..=MAX_CPUS).contains(&cpus) {
        Ok(cpus)
    } else {
        Err(format!(
            "give 1 to {MAX_CPUS} CPUs (jemalloc makes 4 arenas a CPU and stops at {MAX_AUTO_ARENAS}, \
             which {MAX_CPUS} CPUs reach)"
        ))
    }
}

/// CPUs jemalloc counts here (`malloc_ncpus`: the affinity mask on glibc).
pub fn machine_cpus() -> u32 {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity only writes it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            return libc::CPU_COUNT(&set).max(1) as u32;
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// This machine's `CLOCK_MONOTONIC_COARSE` resolution in ns (jemalloc's decay clock on
/// Linux: `nstime_update` reads it when the system has it); 0 if it cannot be read.
pub fn machine_coarse_clock_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres only writes the timespec.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } == 0 {
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    } else {
        0
    }
}
