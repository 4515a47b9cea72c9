#!/usr/bin/env bash
# Builds fragsim against several jemalloc builds (each in its own target folder, since
# jemalloc's size classes are fixed when it is compiled) and runs `fragsim validate` on each.
# Every variant must report zero mismatches; each writes reports/validation-<variant>.md/.csv.
#
#   scripts/validate-variants.sh [--full] [--exhaustive] [variant ...]
#   --exhaustive: also compare every request 0..=4 GiB with nallocx (`validate --exhaustive`,
#   about 15-60 s per variant on 2 cores)
#   variants: default classes quantum8 page64k nco   (all of them when none is named)
set -euo pipefail
cd "$(dirname "$0")/.."

flags=()
if [ "${1:-}" = "--full" ]; then flags=(--full); shift; fi
if [ "${1:-}" = "--exhaustive" ]; then flags+=(--exhaustive); shift; fi
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(default classes quantum8 page64k nco)

run_variant() {
  local name=$1 target=$2; shift 2
  # The remaining words are KEY=VALUE environment settings, then "--" and cargo flags.
  local envs=() cargo_flags=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  cargo_flags=("$@")
  echo "== variant $name (target folder $target)"
  env "${envs[@]}" CARGO_TARGET_DIR="$target" cargo build --release --quiet --bin fragsim "${cargo_flags[@]}"
  env "${envs[@]}" "$target/release/fragsim" validate "${flags[@]}" --variant "$name" --out-dir reports
}

failed=()
for v in "${variants[@]}"; do
  case "$v" in
    # The build tikv-jemalloc-sys ships (5.3.1-dev: large requests rounded to pages).
    default)  run_variant default target -- || failed+=("$v") ;;
    # The same library with large size classes switched back on at run time (5.3.0 behaviour).
    classes)  run_variant classes target _RJEM_MALLOC_CONF=disable_large_size_classes:false -- || failed+=("$v") ;;
    quantum8) run_variant quantum8 target-q8 JEMALLOC_SYS_WITH_LG_QUANTUM=3 -- || failed+=("$v") ;;
    page64k)  run_variant page64k target-p64k JEMALLOC_SYS_WITH_LG_PAGE=16 -- || failed+=("$v") ;;
    nco)      run_variant nco target-nco -- --features disable_cache_oblivious || failed+=("$v") ;;
    *) echo "unknown variant '$v' (known: default classes quantum8 page64k nco)" >&2; exit 2 ;;
  esac
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "validation FAILED for: ${failed[*]}" >&2
  exit 1
fi
echo "all variants validated: ${variants[*]}"
