//! `fragsim validate`'s random traces, replayed model-versus-live on every build at once.

use super::{compare_builds, LiveAllocator, LiveOptions};
use crate::sim::Comparison;
use crate::trace::Record;
use anyhow::Result;
use std::path::Path;

/// One random trace replayed model-versus-live, for `fragsim validate` and the report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReplayCheck {
    /// Which live jemalloc: `5.3.1 disable_large_size_classes:true` etc.
    pub allocator: String,
    pub spec: crate::sim::WorkloadSpec,
    pub comparison: Comparison,
}

/// The random traces `fragsim validate` replays: a mix of small and large (up to 24 MiB)
/// allocations, frees in random order, growing and shrinking reallocs, aligned requests;
/// one large-heavy trace. `quick` keeps it to seconds.
pub fn validation_specs(quick: bool) -> Vec<crate::sim::WorkloadSpec> {
    use crate::sim::WorkloadSpec;
    let events = if quick { 20_000 } else { 200_000 };
    vec![
        WorkloadSpec {
            seed: 1,
            events,
            ..WorkloadSpec::default()
        },
        WorkloadSpec {
            seed: 2,
            events,
            target_live: 400,
            large_share: 0.4,
            realloc_share: 0.2,
            ..WorkloadSpec::default()
        },
    ]
}

/// Replays every trace of `validation_specs` through the model and the linked jemalloc
/// with both `disable_large_size_classes` settings, every event compared. Also Debian's 5.3.0
/// when `system_jemalloc` names its library. 0 mismatches everywhere is the pass. Each
/// jemalloc replays in a child process of `exe`, the fragsim executable (the linked one too:
/// [`LiveAllocator::Isolated`], whose statistics refresh merges two arenas, not every arena
/// of a busy caller's); one engine pass per trace feeds them all at once.
pub fn replay_validation(
    exe: &Path,
    quick: bool,
    system_jemalloc: Option<&Path>,
) -> Result<Vec<ReplayCheck>> {
    let mut allocators = vec![
        (
            "jemalloc 5.3.1 (linked), disable_large_size_classes:true".to_string(),
            LiveAllocator::Isolated(true),
        ),
        (
            "jemalloc 5.3.1 (linked), disable_large_size_classes:false".to_string(),
            LiveAllocator::Isolated(false),
        ),
    ];
    if let Some(lib) = system_jemalloc {
        allocators.push((
            format!("system jemalloc {}", lib.display()),
            LiveAllocator::System(lib.to_path_buf()),
        ));
    }
    let options = LiveOptions {
        every: 1,
        child_exe: Some(exe.to_path_buf()),
        keep: 5,
        ..LiveOptions::default()
    };
    let mut checks = Vec::new();
    for spec in validation_specs(quick) {
        let records = Record::plain_calls(&crate::sim::random_trace(&spec));
        let results = compare_builds(&records, &allocators, &options)?;
        for ((label, _), result) in allocators.iter().zip(results) {
            checks.push(ReplayCheck {
                allocator: format!("{label} ({})", result.config.version.as_str()),
                spec,
                comparison: result.comparison,
            });
        }
    }
    Ok(checks)
}
