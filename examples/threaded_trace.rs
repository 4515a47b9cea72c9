//! Prints a generated multi-threaded trace in the text form (`t TID`, `x`):
//! `cargo run --release --example threaded_trace -- SEED EVENTS THREADS [HUGE_SHARE]`.

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .expect("numbers: SEED EVENTS THREADS [HUGE_PER_MILLE]")
        })
        .collect();
    let d = fragsim::process::ThreadedSpec::default();
    let spec = fragsim::process::ThreadedSpec {
        seed: args.first().copied().unwrap_or(d.seed),
        events: args.get(1).copied().unwrap_or(d.events),
        threads: args.get(2).map_or(d.threads, |&t| t as u32),
        huge_share: args.get(3).map_or(d.huge_share, |&h| h as f64 / 1000.0),
        ..d
    };
    print!(
        "{}",
        fragsim::process::to_text(&fragsim::process::threaded_trace(&spec))
    );
}
