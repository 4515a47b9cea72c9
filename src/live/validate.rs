//! `fragsim validate`: every kind of number fragsim predicts, checked against live jemalloc.

use super::{nallocx, LiveBuild, PrivateArena, LARGE_CLASS_CAP};
use crate::export::Table;
use crate::layout::{Layout, SplitOrUnified};
use crate::sizeclass::{AllocatorConfig, SizeClasses};
use crate::sweep::{physical_sweep, SizeRange, SweepSpec};
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

/// What to check.
#[derive(Clone, Debug)]
pub struct ValidateOptions {
    /// The model to check; `None` derives it from the live build's page and quantum.
    pub model: Option<AllocatorConfig>,
    /// Every request up to this is compared with nallocx.
    pub exhaustive_up_to: u64,
    /// Log-uniform requests compared with nallocx up to the largest class.
    pub random_requests: u64,
    /// F14 rows allocated for real.
    pub sweep: SweepSpec,
    /// Instances per row: as many as fit in this many bytes, at least 1 ...
    pub bytes_per_row: u64,
    /// ... and at most this many.
    pub max_instances: u64,
    pub progress: bool,
}

impl ValidateOptions {
    /// The default, reduced sweep: value sizes 8..=256:8, tables up to 10,240 values.
    pub fn reduced() -> Self {
        ValidateOptions {
            model: None,
            exhaustive_up_to: 4 << 20,
            random_requests: 4000,
            sweep: SweepSpec {
                sizes: SizeRange::new(8, 256, 8).expect("valid range"),
                max_capacity: 10 << 10,
                value_align: None,
            },
            bytes_per_row: 16 << 20,
            max_instances: 300,
            progress: false,
        }
    }

    /// The full physical table (tables up to 10·2^20 values).
    pub fn full() -> Self {
        let mut options = Self::reduced();
        options.sweep.max_capacity = 10 << 20;
        options
    }
}

/// One comparison, predicted beside measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub check: String,
    pub subject: String,
    pub predicted: String,
    pub measured: String,
    pub ok: bool,
}

/// Real allocations of one F14 layout.
#[derive(Clone, Debug, PartialEq)]
pub struct F14Measurement {
    pub value_size: u64,
    pub capacity: u64,
    /// `before` (split) or `after` (unified).
    pub layout: &'static str,
    pub instances: u64,
    pub predicted_usable: u64,
    pub measured_usable: u64,
    pub predicted_active: u64,
    pub measured_active: u64,
    pub predicted_calls: u64,
    pub measured_calls: u64,
}

impl F14Measurement {
    pub fn ok(&self) -> bool {
        self.predicted_usable == self.measured_usable
            && self.predicted_active == self.measured_active
            && self.predicted_calls == self.measured_calls
    }
}

/// Everything one validation run found.
#[derive(Clone, Debug)]
pub struct Validation {
    pub live: LiveBuild,
    pub model: AllocatorConfig,
    /// Class-table and nallocx checks (nallocx summarised, its mismatches listed).
    pub checks: Vec<Check>,
    pub f14: Vec<F14Measurement>,
    /// Individual comparisons made (every nallocx request counts).
    pub compared: u64,
    pub mismatches: u64,
}

impl Validation {
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }

    /// Human-readable descriptions of the first `n` mismatches.
    pub fn first_mismatches(&self, n: usize) -> Vec<String> {
        let checks = self.checks.iter().filter(|c| !c.ok).map(|c| {
            format!(
                "{} {}: predicted {}, measured {}",
                c.check, c.subject, c.predicted, c.measured
            )
        });
        let f14 = self.f14.iter().filter(|m| !m.ok()).map(|m| {
            format!(
                "F14 {} B x {} {}: predicted {} usable / {} active / {} calls, measured {} / {} / {}",
                m.value_size, m.capacity, m.layout, m.predicted_usable, m.predicted_active,
                m.predicted_calls, m.measured_usable, m.measured_active, m.measured_calls
            )
        });
        checks.chain(f14).take(n).collect()
    }
}

/// Compares the model with the running jemalloc. Runs serially: the measurements use
/// private arenas, but one at a time keeps the process's footprint small.
pub fn validate(options: &ValidateOptions) -> Result<Validation> {
    let live = LiveBuild::read()?;
    let model = match options.model {
        Some(config) => config,
        None => live.config()?,
    };
    let classes = SizeClasses::new(model)?;
    let mut v = Validation {
        live,
        model,
        checks: Vec::new(),
        f14: Vec::new(),
        compared: 0,
        mismatches: 0,
    };
    check_class_table(&mut v, &classes);
    check_nallocx(&mut v, &classes, options);
    measure_f14(&mut v, &classes, options)?;
    Ok(v)
}

fn record(v: &mut Validation, check: &str, subject: String, predicted: String, measured: String) {
    let ok = predicted == measured;
    v.compared += 1;
    if !ok {
        v.mismatches += 1;
    }
    v.checks.push(Check {
        check: check.into(),
        subject,
        predicted,
        measured,
        ok,
    });
}

fn check_class_table(v: &mut Validation, classes: &SizeClasses) {
    let live = v.live.clone();
    let page = |b: u64| b.to_string();
    record(
        v,
        "build",
        "page".into(),
        page(v.model.page()),
        page(live.page),
    );
    record(
        v,
        "build",
        "quantum".into(),
        page(v.model.quantum()),
        page(live.quantum),
    );
    record(
        v,
        "build",
        "cache_oblivious".into(),
        v.model.cache_oblivious.to_string(),
        live.cache_oblivious.to_string(),
    );
    record(
        v,
        "build",
        "large_page_rounding".into(),
        v.model.large_page_rounding.to_string(),
        live.large_page_rounding.to_string(),
    );
    record(
        v,
        "classes",
        "small classes (nbins)".into(),
        classes.bins().len().to_string(),
        live.bins.len().to_string(),
    );
    record(
        v,
        "classes",
        "large classes (nlextents)".into(),
        classes.large().len().to_string(),
        live.nlextents.to_string(),
    );
    let describe =
        |size: u64, nregs: u64, slab: u64| format!("{size} B, {nregs} regions, slab {slab} B");
    let n = classes.bins().len().max(live.bins.len());
    for i in 0..n {
        let predicted = classes
            .bins()
            .get(i)
            .map_or("none".into(), |c| describe(c.size, c.nregs, c.slab_size));
        let measured = live
            .bins
            .get(i)
            .map_or("none".into(), |b| describe(b.size, b.nregs, b.slab_size));
        record(v, "small class", format!("bin {i}"), predicted, measured);
    }
    let model_large: Vec<u64> = classes
        .large()
        .iter()
        .map(|c| c.size)
        .take_while(|&s| s <= LARGE_CLASS_CAP)
        .collect();
    let n = model_large.len().max(live.large.len());
    for i in 0..n {
        let show = |s: Option<&u64>| s.map_or("none".into(), |s| format!("{s} B"));
        record(
            v,
            "large class",
            format!("lextent {i}"),
            show(model_large.get(i)),
            show(live.large.get(i)),
        );
    }
}

/// splitmix64: a small, well-known generator, so the requests are the same every run.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Requests spread log-uniformly from 1 byte up to `max`.
pub fn log_uniform_requests(count: u64, max: u64, seed: u64) -> Vec<u64> {
    let mut state = seed;
    let bits = 64 - max.leading_zeros();
    (0..count)
        .map(|_| {
            let width = 1 + splitmix64(&mut state) % u64::from(bits);
            let r = splitmix64(&mut state) >> (64 - width);
            r.clamp(1, max)
        })
        .collect()
}

fn check_nallocx(v: &mut Validation, classes: &SizeClasses, options: &ValidateOptions) {
    let predicted = |r: u64| classes.usable_size(r).unwrap_or(0);
    let mut listed = 0;
    let mut compare =
        |v: &mut Validation, requests: &mut dyn Iterator<Item = u64>, what: String| {
            let (mut checked, mut bad) = (0u64, 0u64);
            for r in requests {
                let (p, m) = (predicted(r), nallocx(r));
                checked += 1;
                if p != m {
                    bad += 1;
                    if listed < 20 {
                        listed += 1;
                        v.checks.push(Check {
                            check: "nallocx".into(),
                            subject: format!("request {r}"),
                            predicted: p.to_string(),
                            measured: m.to_string(),
                            ok: false,
                        });
                    }
                }
            }
            v.compared += checked;
            v.mismatches += bad;
            v.checks.push(Check {
                check: "nallocx".into(),
                subject: what,
                predicted: format!("{checked} requests agree"),
                measured: format!("{} requests agree", checked - bad),
                ok: bad == 0,
            });
        };
    compare(
        v,
        &mut (0..=options.exhaustive_up_to),
        format!("every request 0..={}", options.exhaustive_up_to),
    );
    let top = classes.large_maxclass();
    let mut spread = log_uniform_requests(options.random_requests, top, 0x5EED);
    // Either side of the largest class: the last size served and the first refused.
    spread.extend([top, top + 1]);
    compare(
        v,
        &mut spread.into_iter(),
        format!(
            "{} log-uniform requests up to the largest class + 1",
            options.random_requests + 2
        ),
    );
}

/// How many instances of a layout whose blocks take `usable` bytes to allocate.
fn instances(options: &ValidateOptions, usable: u64) -> u64 {
    (options.bytes_per_row / usable.max(1)).clamp(1, options.max_instances)
}

/// Active bytes `count` instances of `layout` need in an empty arena.
fn predicted_active(classes: &SizeClasses, layout: &Layout, count: u64) -> Option<u64> {
    let requests: Vec<(u64, u64)> = layout.blocks.iter().map(|b| (b.bytes, count)).collect();
    classes.active_bytes_of(&requests)
}

fn measure_layout(layout: &Layout, count: u64) -> Result<(u64, u64, u64)> {
    let arena = PrivateArena::create()?;
    let mut live = Vec::with_capacity((count as usize) * layout.blocks.len());
    let mut calls = 0;
    for _ in 0..count {
        for block in &layout.blocks {
            live.push((arena.alloc(block.bytes)?, block.bytes));
            calls += 1;
        }
    }
    let usage = arena.usage();
    for (ptr, size) in live {
        // SAFETY: each pointer came from this arena's alloc(size) and is freed once.
        unsafe { arena.free(ptr, size) };
    }
    let usage = usage?;
    Ok((usage.allocated, usage.active, calls / count))
}

fn measure_f14(v: &mut Validation, classes: &SizeClasses, options: &ValidateOptions) -> Result<()> {
    let rows = physical_sweep(classes, &options.sweep)?;
    let bar = if options.progress {
        let bar = ProgressBar::new(rows.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("validate {bar:40} {pos}/{len} rows {elapsed}")
                .expect("valid template"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    for row in &rows {
        for (name, layout, cost) in [
            ("before", row.table.split(), row.before),
            ("after", row.table.unified(), row.after),
        ] {
            let count = instances(options, cost.usable);
            let (usable, active, calls) = measure_layout(&layout, count)?;
            let m = F14Measurement {
                value_size: row.table.value_size,
                capacity: row.table.capacity,
                layout: name,
                instances: count,
                predicted_usable: cost.usable * count,
                measured_usable: usable,
                predicted_active: predicted_active(classes, &layout, count).unwrap_or(0),
                measured_active: active,
                predicted_calls: cost.calls,
                measured_calls: calls,
            };
            v.compared += 3;
            if !m.ok() {
                v.mismatches += 1;
            }
            v.f14.push(m);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

/// All checks as one table: predicted beside measured.
pub fn validation_table(v: &Validation) -> Table {
    let mut table = Table::new(
        format!(
            "Live validation: model {} against jemalloc {}",
            v.model.label(),
            v.live.version
        ),
        &["check", "subject", "predicted", "measured", "status"],
    );
    let status = |ok: bool| if ok { "ok" } else { "MISMATCH" };
    for c in &v.checks {
        table.push(vec![
            c.check.clone().into(),
            c.subject.clone().into(),
            c.predicted.clone().into(),
            c.measured.clone().into(),
            status(c.ok).into(),
        ]);
    }
    for m in &v.f14 {
        let subject = format!(
            "{} B x {} {} (x{})",
            m.value_size, m.capacity, m.layout, m.instances
        );
        for (what, p, q) in [
            ("F14 usable bytes", m.predicted_usable, m.measured_usable),
            ("F14 active bytes", m.predicted_active, m.measured_active),
            ("F14 calls per table", m.predicted_calls, m.measured_calls),
        ] {
            table.push(vec![
                what.into(),
                subject.clone().into(),
                p.into(),
                q.into(),
                status(p == q).into(),
            ]);
        }
    }
    table
}

/// The validation report: build, summary, then every check.
pub fn validation_markdown(v: &Validation, command: &str) -> Result<String> {
    use crate::export::{Markdown, TableFormat};
    let mut out = String::new();
    out.push_str("# Live validation\n\n");
    out.push_str(&format!("Produced by `{command}`.\n\n"));
    out.push_str(&format!(
        "- jemalloc {} (page {} B, quantum {} B, cache-oblivious {}, large requests rounded to {})\n- model: {}\n",
        v.live.version, v.live.page, v.live.quantum, v.live.cache_oblivious,
        if v.live.large_page_rounding { "pages" } else { "size classes" }, v.model.label()
    ));
    out.push_str(&format!(
        "- comparisons: {} ({} class-table and build checks, {} F14 rows allocated for real)\n- mismatches: **{}**\n\n",
        v.compared,
        v.checks.iter().filter(|c| c.check != "nallocx").count(),
        v.f14.len(),
        v.mismatches
    ));
    if !v.passed() {
        out.push_str("First mismatches:\n\n");
        for line in v.first_mismatches(10) {
            out.push_str(&format!("- {line}\n"));
        }
        out.push('\n');
    }
    out.push_str("Usable bytes are jemalloc's own count (`stats.arenas.<a>.small.allocated + large.allocated`) in a private arena with no thread cache; active bytes are `stats.arenas.<a>.pactive` x page. Calls are counted by the measuring code.\n\n");
    let mut table = validation_table(v);
    table.title.clear();
    out.push_str(&Markdown.render(&table)?);
    Ok(out)
}
