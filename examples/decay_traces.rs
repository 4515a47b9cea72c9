//! Writes the two generated traces with times of the decay check (`data/traces/decay/`):
//! `cargo run --release --example decay_traces -- data/traces/decay`.

use fragsim::process::{timed_trace, TimedShape, TimedSpec};
use fragsim::trace::{write_records, Fields};
use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "data/traces/decay".into()),
    );
    let fields = Fields {
        threads: true,
        times: true,
        sites: false,
    };
    for (name, shape) in [
        ("bursty.trace", TimedShape::Bursty),
        ("idle.trace", TimedShape::Idle),
    ] {
        let records = timed_trace(&TimedSpec {
            seed: 25,
            shape,
            threads: 2,
        });
        let path = dir.join(name);
        write_records(&path, fields, records.into_iter().map(Ok))?;
        println!("{}", path.display());
    }
    Ok(())
}
