# Shared by bench-record.sh and bench-record-ab.sh (sourced, after they set $work, the
# scratch folder, $python, the interpreter, and built $work/threads_map).

# "WALL CPU" seconds of one run of "$@" (CPU: user + sys of it and its children), output
# discarded. The machine may be shared: CPU time is the steadier figure, wall what a user sees.
timed() {
  local t
  t=$( { TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>"$work/stderr"; } 2>&1 ) || {
    cat "$work/stderr" >&2
    return 1
  }
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' <<<"$t"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# One more run of "$@" into column $1's times.
run() {
  local col=$1
  shift
  timed "$@" >>"$work/$col.times"
}

# "WALL CPU" medians of column $1's runs
med() {
  echo "$(cut -d' ' -f1 "$work/$1.times" | median) $(cut -d' ' -f2 "$work/$1.times" | median)"
}

# "WALL (RATIO) / CPU (RATIO)" against the bare medians ($bare_w, $bare_c)
cell() {
  read -r w c <<<"$1"
  printf '%s (%.2fx) / %s (%.2fx)' "$w" "$(bc -l <<<"$w / $bare_w")" "$c" "$(bc -l <<<"$c / $bare_c")"
}

# Sets cmd to workload $1's command (python or cpp) and PYTHONMALLOC for it. PYTHONMALLOC goes
# through the environment, not `env`: valgrind and heaptrack would trace `env` alone (they do
# not follow its exec).
workload_cmd() {
  case $1 in
    python) cmd=("$python" -c 'd = {str(i): i for i in range(1_000_000)}') ;;
    cpp) cmd=("$work/threads_map" 100000) ;;
    *) echo "unknown workload '$1' (python, cpp)" >&2; exit 2 ;;
  esac
  if [ "$1" = python ]; then export PYTHONMALLOC=malloc; else unset PYTHONMALLOC; fi
}

# ",autoorder" where `fragsim record`'s default order (`auto`) uses the TSC from the second
# thread on (x86-64 with constant_tsc, nonstop_tsc and rdtscp, the tsc clocksource; the check
# of src/record/order.rs), else nothing: the recorder-alone columns' flags then match the
# default's.
auto_order_flag() {
  local flags source
  flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
  source=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || true)
  if [ "$(uname -m)" = x86_64 ] && [ "$source" = tsc ] &&
    grep -qw constant_tsc <<<"$flags" && grep -qw nonstop_tsc <<<"$flags" && grep -qw rdtscp <<<"$flags"; then
    echo ",autoorder"
  fi
}
