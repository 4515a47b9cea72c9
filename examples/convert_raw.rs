//! Converts a raw file the native recorder wrote (`fragsim record --keep-raw DIR`) into a
//! trace and prints how long that took: the conversion alone, for profiling it.
//! `cargo run --release --example convert_raw -- RAW OUT [--stacks]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [raw, out, rest @ ..] = args.as_slice() else {
        eprintln!("usage: convert_raw RAW OUT [--stacks]");
        std::process::exit(2);
    };
    let fields = fragsim::trace::Fields {
        threads: true,
        times: true,
        sites: rest.iter().any(|a| a == "--stacks"),
    };
    let started = std::time::Instant::now();
    match fragsim::record::convert_file(raw.as_ref(), out.as_ref(), fields, 0) {
        Ok(t) => {
            let secs = started.elapsed().as_secs_f64();
            println!(
                "{} events in {secs:.3} s ({:.1} ns/event), {} bytes",
                t.summary.events,
                secs * 1e9 / t.summary.events.max(1) as f64,
                t.bytes
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
