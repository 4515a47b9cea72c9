//! Builds the recorder library (`preload/`, a cdylib) and hands it to the crate, which embeds
//! it (`src/record/library.rs`): every way of getting the binary (`cargo build`, `cargo run`,
//! `cargo install --path .`) then records, without a library to find beside it.
//!
//! The library is built by a cargo of its own, in a target folder under `OUT_DIR` (never the
//! outer build's, whose lock that cargo holds), with the outer build's profile and job server.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    for path in [
        "preload/src",
        "preload/Cargo.toml",
        "src/record/raw/wire.rs",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
    // A cdylib of the dev profile records as well, only slower; any profile that inherits
    // from release (release, bench, custom ones) gets release.
    let release = env::var("PROFILE").as_deref() == Ok("release");
    let target_dir = out.join("preload-target");
    let mut cargo = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .args(["build", "-q", "-p", "fragsim-preload", "--manifest-path"])
        .arg(manifest.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    if release {
        cargo.arg("--release");
    }
    // The outer build's settings that name its own target folder or target would send the
    // library elsewhere; the library is for the machine that runs fragsim.
    for var in [
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_TARGET_DIR",
    ] {
        cargo.env_remove(var);
    }
    // A `build.build-dir` the user configured would be the outer build's, locked by it: the
    // library's intermediate files go to its own folder too.
    cargo.env("CARGO_BUILD_BUILD_DIR", &target_dir);
    let status = cargo
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build preload/: {e}"));
    assert!(
        status.success(),
        "building preload/ (the recorder library) failed"
    );
    let lib = target_dir
        .join(if release { "release" } else { "debug" })
        .join("libfragsim_preload.so");
    let bytes = std::fs::read(&lib).unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
    println!("cargo:rustc-env=FRAGSIM_PRELOAD_SO={}", lib.display());
    println!(
        "cargo:rustc-env=FRAGSIM_PRELOAD_HASH={:016x}",
        fnv1a(&bytes)
    );
}

/// FNV-1a, 64 bits: names the cached copy by its content (not a security measure: the copy is
/// compared byte for byte before use).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}
