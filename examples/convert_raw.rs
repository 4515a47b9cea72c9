//! Converts a raw file the native recorder wrote (`fragsim record --keep-raw DIR`) into a
//! trace and prints how long that took: the conversion alone, for profiling it.
//! `cargo run --release --example convert_raw -- RAW OUT [--stacks] [--threads N]`:
//! `--threads 1` writes the trace on the converting thread, 2 (the default) on a second one,
//! 3 assigns the object ids on a third, 4 and 5 decode the threads' chunks on 1 or 2 more, 6 or
//! more keep the address table split over N - 5 shard threads
//! (`fragsim::record::threads_of_count`). It prints the wall time and events per second, and
//! each thread's CPU time per event: the converting thread's (the merge in order; the object
//! ids without the id thread, the decoding without decoders), the id thread's, the busiest
//! address shard's, the decoding threads' (summed) and the writing thread's. The parts that
//! run in order are the merge and the ids: the larger of those two threads' figures (or the
//! busiest shard's, if larger) bounds the conversion's speed.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [raw, out, rest @ ..] = args.as_slice() else {
        eprintln!("usage: convert_raw RAW OUT [--stacks] [--threads N]");
        std::process::exit(2);
    };
    let fields = fragsim::trace::Fields {
        threads: true,
        times: true,
        sites: rest.iter().any(|a| a == "--stacks"),
    };
    let threads = match rest.iter().position(|a| a == "--threads") {
        Some(i) => match rest.get(i + 1).map(|t| t.parse::<u32>()) {
            Some(Ok(t @ 1..=64)) => t,
            _ => {
                eprintln!("--threads: 1 to 64");
                std::process::exit(2);
            }
        },
        None => 2,
    };
    let started = std::time::Instant::now();
    match fragsim::record::convert_file_on(raw.as_ref(), out.as_ref(), fields, 0, threads) {
        Ok(t) => {
            let secs = started.elapsed().as_secs_f64();
            let n = t.summary.events.max(1) as f64;
            println!(
                "{} events in {secs:.3} s on {threads} thread(s): {:.2} M events/s, {:.1} ns/event wall; CPU {:.1} ns/event converting, {:.1} ns/event ids, {:.1} ns/event shard, {:.1} ns/event decoding, {:.1} ns/event writing; {} bytes",
                t.summary.events,
                n / secs / 1e6,
                secs * 1e9 / n,
                t.convert_cpu_ns as f64 / n,
                t.summary.ids_cpu_ns as f64 / n,
                t.summary.shards_cpu_ns as f64 / n,
                t.summary.decode_cpu_ns as f64 / n,
                t.write_cpu_ns as f64 / n,
                t.bytes
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
