// The live measurements must see the allocator the model describes.
fragsim::use_jemalloc!();

fn main() {
    std::process::exit(fragsim::cli::main());
}
