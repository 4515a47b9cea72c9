#!/usr/bin/env bash
# Builds jemalloc as a shared library configured the way a build people deploy is, for the live
# checks of its preset (`--system-jemalloc`). The source is jemalloc 5.3.0 as tikv-jemalloc-sys
# 0.5.4 carries it (the 5.3.0 release, commit 54eaed1d, with its generated `configure`), fetched
# by cargo from the crate registry.
#
#   scripts/build-jemalloc.sh redis   # Redis 7's bundled jemalloc: --with-lg-quantum=3
#                                     # --disable-cache-oblivious (redis deps/Makefile)
#   scripts/build-jemalloc.sh page64k # 64 KiB pages on this 4 KiB-page kernel:
#                                     # --with-lg-page=16 (arm64 server packages)
#   scripts/build-jemalloc.sh 5.2.1   # jemalloc 5.2.1 with its defaults (Ubuntu 22.04's,
#                                     # Redis 7.0's), from tikv-jemalloc-sys 0.4.3
#
# Prints the library's path: target/jemalloc/NAME/libjemalloc.so.2 (kept: a second run only
# prints it). About a minute on 2 cores. The build folder is removed on success, failure and
# interrupt; the library appears whole or not at all.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-redis}
crate=0.5.4
release=5.3.0-patched
case "$name" in
  redis) flags=(--with-lg-quantum=3 --disable-cache-oblivious) ;;
  page64k) flags=(--with-lg-page=16) ;;
  5.2.1) flags=() crate=0.4.3 release=5.2.1-patched.2 ;;
  *) echo "unknown build '$name' (known: redis, page64k, 5.2.1)" >&2; exit 2 ;;
esac
out=target/jemalloc/$name
lib=$out/libjemalloc.so.2
if [ -e "$lib" ]; then echo "$lib"; exit 0; fi
tmp=$(mktemp -d)
partial=$out/.libjemalloc.so.2.partial.$$
trap 'rm -rf "$tmp" "$partial"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$tmp/fetch/src"
printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\ntikv-jemalloc-sys = "=%s"\n' "$crate" > "$tmp/fetch/Cargo.toml"
echo 'fn main() {}' > "$tmp/fetch/src/main.rs"
cargo fetch -q --manifest-path "$tmp/fetch/Cargo.toml"
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/tikv-jemalloc-sys-$crate+$release | head -1)
cp -r "$src/jemalloc" "$tmp/build"
cp "$src/configure/configure" "$src/configure/VERSION" "$tmp/build/"
(cd "$tmp/build" && ./configure -q ${flags[@]+"${flags[@]}"} >/dev/null && make -s -j"$(nproc)" build_lib_shared >/dev/null)
mkdir -p "$out"
cp "$tmp/build/lib/libjemalloc.so.2" "$partial"
mv "$partial" "$lib"
echo "$lib"
