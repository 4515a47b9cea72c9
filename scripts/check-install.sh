#!/usr/bin/env bash
# An install that records (issue 39 §4): a clean copy of the repository (the files git lists:
# tracked and new, not ignored), `cargo install --path` of it into a temporary root, then the
# installed binary, alone in its folder and with an empty cache, records a small program and
# the trace has events. The build reuses target/install-check/ (dependencies compile once;
# the copy keeps the files' times, so an unchanged tree is not rebuilt either).
set -euo pipefail
cd "$(dirname "$0")/.."
reuse=${CARGO_TARGET_DIR:-target}/install-check
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

src="$reuse/src"
rm -rf "$src"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -xf - -C "$src"

start=$(date +%s)
CARGO_TARGET_DIR="$reuse/target" cargo install --quiet --locked --path "$src" --root "$work/root"
echo "check-install: cargo install took $(($(date +%s) - start)) s"

ls "$work/root/bin"
[ "$(ls "$work/root/bin")" = fragsim ] || { echo "check-install: more than fragsim installed" >&2; exit 1; }

# Nothing to find but what the binary carries: no override, an empty cache.
env -u FRAGSIM_PRELOAD XDG_CACHE_HOME="$work/cache" \
  "$work/root/bin/fragsim" record -o "$work/t.trace" -- sh -c 'ls / > /dev/null'
events=$("$work/root/bin/fragsim" trace stats --format csv "$work/t.trace" | awk -F, 'NR == 2 { print $2 }')
[ "$events" -gt 10 ] || { echo "check-install: the trace has $events events" >&2; exit 1; }
mode=$(stat -c %a "$work/cache/fragsim")
[ "$mode" = 700 ] || { echo "check-install: cache folder mode $mode" >&2; exit 1; }
echo "check-install: the installed fragsim recorded $events events"
