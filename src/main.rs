fn main() {
    std::process::exit(fragsim::cli::main());
}
