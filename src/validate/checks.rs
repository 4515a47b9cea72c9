//! The class table and `nallocx`, predicted beside what the running jemalloc reports.

use super::exhaustive::exhaustive_check;
use super::{Check, ValidateOptions};
use crate::live::{nallocx, LiveBuild, LARGE_CLASS_CAP};
use crate::random::log_uniform_requests;
use crate::sizeclass::{AllocatorConfig, SizeClasses};

/// nallocx mismatches listed one by one (beyond these only the summary counts them).
const LISTED_NALLOCX_MISMATCHES: usize = 20;

/// Build parameters, class counts, and every small and large class.
pub(super) fn class_table(
    model: &AllocatorConfig,
    live: &LiveBuild,
    classes: &SizeClasses,
) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut record = |check: &str, subject: &str, predicted: String, measured: String| {
        checks.push(Check::single(check, subject.into(), predicted, measured));
    };
    record(
        "build",
        "page",
        model.page().to_string(),
        live.page.to_string(),
    );
    record(
        "build",
        "quantum",
        model.quantum().to_string(),
        live.quantum.to_string(),
    );
    record(
        "build",
        "cache_oblivious",
        model.cache_oblivious.to_string(),
        live.cache_oblivious.to_string(),
    );
    record(
        "build",
        "large_page_rounding",
        model.large_page_rounding.to_string(),
        live.large_page_rounding.to_string(),
    );
    record(
        "classes",
        "small classes (nbins)",
        classes.bins().len().to_string(),
        live.bins.len().to_string(),
    );
    record(
        "classes",
        "large classes (nlextents)",
        classes.large().len().to_string(),
        live.nlextents.to_string(),
    );
    let describe =
        |size: u64, nregs: u64, slab: u64| format!("{size} B, {nregs} regions, slab {slab} B");
    for i in 0..classes.bins().len().max(live.bins.len()) {
        let predicted = classes
            .bins()
            .get(i)
            .map_or("none".into(), |c| describe(c.size, c.nregs, c.slab_size));
        let measured = live
            .bins
            .get(i)
            .map_or("none".into(), |b| describe(b.size, b.nregs, b.slab_size));
        record("small class", &format!("bin {i}"), predicted, measured);
    }
    let model_large: Vec<u64> = classes
        .large()
        .iter()
        .map(|c| c.size)
        .take_while(|&s| s <= LARGE_CLASS_CAP)
        .collect();
    let show = |s: Option<&u64>| s.map_or("none".into(), |s| format!("{s} B"));
    for i in 0..model_large.len().max(live.large.len()) {
        record(
            "large class",
            &format!("lextent {i}"),
            show(model_large.get(i)),
            show(live.large.get(i)),
        );
    }
    checks
}

/// Every request up to `exhaustive_up_to`, then log-uniform ones up to the largest class and
/// one past it: each group a summary row, its first mismatches listed before it.
pub(super) fn nallocx_requests(classes: &SizeClasses, options: &ValidateOptions) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut listed = 0;
    // Every request up to the bound: on all cores, the model side through the batch lookup.
    let progress = &options.progress;
    progress.start("requests", options.exhaustive_up_to.saturating_add(1));
    let all = exhaustive_check(classes, options.exhaustive_up_to, nallocx, |n| {
        progress.advance(n)
    });
    progress.finish();
    for m in all.first_mismatches.iter().take(LISTED_NALLOCX_MISMATCHES) {
        listed += 1;
        checks.push(Check {
            check: "nallocx".into(),
            subject: format!("request {}", m.request),
            predicted: m.predicted.unwrap_or(0).to_string(),
            measured: m.measured.to_string(),
            ok: false,
            // Counted in the summary row below.
            compared: 0,
            mismatched: 0,
        });
    }
    checks.push(Check {
        check: "nallocx".into(),
        subject: format!("every request 0..={}", options.exhaustive_up_to),
        predicted: format!("{} requests agree", all.compared),
        measured: format!("{} requests agree", all.compared - all.mismatched),
        ok: all.passed(),
        compared: all.compared,
        mismatched: all.mismatched,
    });
    let mut compare = |requests: &mut dyn Iterator<Item = u64>, what: String| {
        let (mut compared, mut mismatched) = (0u64, 0u64);
        for r in requests {
            let (p, m) = (classes.usable_size(r).unwrap_or(0), nallocx(r));
            compared += 1;
            if p != m {
                mismatched += 1;
                if listed < LISTED_NALLOCX_MISMATCHES {
                    listed += 1;
                    checks.push(Check {
                        check: "nallocx".into(),
                        subject: format!("request {r}"),
                        predicted: p.to_string(),
                        measured: m.to_string(),
                        ok: false,
                        // Counted in the summary row below.
                        compared: 0,
                        mismatched: 0,
                    });
                }
            }
        }
        checks.push(Check {
            check: "nallocx".into(),
            subject: what,
            predicted: format!("{compared} requests agree"),
            measured: format!("{} requests agree", compared - mismatched),
            ok: mismatched == 0,
            compared,
            mismatched,
        });
    };
    let top = classes.large_maxclass();
    let mut spread = log_uniform_requests(options.random_requests, top, 0x5EED);
    // Either side of the largest class: the last size served and the first refused.
    spread.extend([top, top + 1]);
    compare(
        &mut spread.into_iter(),
        format!(
            "{} log-uniform requests up to the largest class + 1",
            options.random_requests + 2
        ),
    );
    checks
}
