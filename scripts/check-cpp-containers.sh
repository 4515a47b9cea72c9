#!/usr/bin/env bash
# Compiles abseil's flat/node hash maps and sets (Debian's libabsl-dev, 20220623) against a
# recording operator new/delete, grows each to N elements and destroys it, and requires the
# recorded requests to equal `fragsim container NAME ... --trace-text` line for line.
#
# Node tables free their nodes at destruction in slot order, which depends on the hashes;
# the model frees them in insertion order. The destruction's frees are therefore compared as
# a multiset (sorted), everything before them exactly.
#
# COUNTS="1 7 100" overrides the element counts; KEEP_RECORDER=1 keeps the work folder.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! dpkg -s libabsl-dev >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq libabsl-dev
fi
command -v g++ >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq g++; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -n ${KEEP_RECORDER:-} ]] && trap - EXIT && echo "work folder: $work"

cat > "$work/recorder.cpp" <<'CPP'
// Grows one abseil table and prints every operator new/delete it makes, in fragsim's trace
// text form: "a ID SIZE [ALIGN]" (ALIGN only for aligned new), "f ID"; ids are recycled
// lowest-first.
#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/container/internal/hashtablez_sampler.h>
#include <absl/container/node_hash_map.h>
#include <absl/container/node_hash_set.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

struct Call { char kind; void* ptr; size_t size; size_t align; };
static bool recording = false;
static std::vector<Call>* calls;

static void note(char kind, void* p, size_t size, size_t align) {
  if (!recording) return;
  recording = false;
  calls->push_back({kind, p, size, align});
  recording = true;
}

void* operator new(size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  note('a', p, n, 0);
  return p;
}
void* operator new(size_t n, std::align_val_t a) {
  size_t al = static_cast<size_t>(a);
  void* p = std::aligned_alloc(al, (n + al - 1) / al * al);
  if (!p) throw std::bad_alloc();
  note('a', p, n, al);
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { if (p) { note('f', p, 0, 0); std::free(p); } }
void operator delete(void* p, size_t) noexcept { operator delete(p); }
void operator delete(void* p, std::align_val_t) noexcept { operator delete(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { operator delete(p); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete[](void* p, size_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { operator delete(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { operator delete(p); }

template <size_t S, size_t A>
struct alignas(A) Blob {
  unsigned char b[S];
  static Blob make(uint64_t i) {
    Blob x;
    std::memset(x.b, 0, S);
    std::memcpy(x.b, &i, S < 8 ? S : 8);
    return x;
  }
  bool operator==(const Blob& o) const { return std::memcmp(b, o.b, S) == 0; }
};
struct BlobHash {
  template <size_t S, size_t A>
  size_t operator()(const Blob<S, A>& x) const {
    return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(x.b), S));
  }
};

template <size_t S, size_t A> struct T { static constexpr size_t s = S, a = A; };
using Keys = std::tuple<T<8, 8>, T<4, 4>, T<16, 16>, T<3, 1>, T<32, 32>, T<100, 4>>;
using Values = std::tuple<T<24, 8>, T<1, 1>, T<48, 16>, T<256, 32>, T<8, 8>>;

template <class F, class... Ts>
bool any_of_types(std::tuple<Ts...>*, F f) { return (f(static_cast<Ts*>(nullptr)) || ...); }

template <class Table, class Insert>
void grow(uint64_t n, Insert insert) {
  recording = true;
  {
    Table t;
    for (uint64_t i = 0; i < n; ++i) insert(t, i);
  }
  recording = false;
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 7) {
    std::fprintf(stderr, "usage: recorder NAME KEY_SIZE KEY_ALIGN [VALUE_SIZE VALUE_ALIGN] N\n");
    return 2;
  }
  absl::container_internal::SetHashtablezEnabled(false);
  std::string name = argv[1];
  size_t ks = std::stoul(argv[2]), ka = std::stoul(argv[3]);
  bool map = argc == 7;
  size_t vs = map ? std::stoul(argv[4]) : 0, va = map ? std::stoul(argv[5]) : 0;
  uint64_t n = std::stoull(argv[argc - 1]);
  calls = new std::vector<Call>();
  calls->reserve(4 * n + 1024);
  bool found = any_of_types(static_cast<Keys*>(nullptr), [&](auto* k) {
    using KT = std::remove_pointer_t<decltype(k)>;
    if (KT::s != ks || KT::a != ka) return false;
    using K = Blob<KT::s, KT::a>;
    if (!map) {
      auto ins = [](auto& t, uint64_t i) { t.insert(K::make(i)); };
      if (name == "absl-flat-hash-set") grow<absl::flat_hash_set<K, BlobHash>>(n, ins);
      else if (name == "absl-node-hash-set") grow<absl::node_hash_set<K, BlobHash>>(n, ins);
      else return false;
      return true;
    }
    return any_of_types(static_cast<Values*>(nullptr), [&](auto* v) {
      using VT = std::remove_pointer_t<decltype(v)>;
      if (VT::s != vs || VT::a != va) return false;
      using V = Blob<VT::s, VT::a>;
      auto ins = [](auto& t, uint64_t i) { t.emplace(K::make(i), V::make(i)); };
      if (name == "absl-flat-hash-map") grow<absl::flat_hash_map<K, V, BlobHash>>(n, ins);
      else if (name == "absl-node-hash-map") grow<absl::node_hash_map<K, V, BlobHash>>(n, ins);
      else return false;
      return true;
    });
  });
  if (!found) {
    std::fprintf(stderr, "recorder: no instantiation for %s\n", name.c_str());
    return 2;
  }
  std::map<void*, unsigned> ids;
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<unsigned>> free_ids;
  unsigned next = 0;
  for (const Call& c : *calls) {
    if (c.kind == 'a') {
      unsigned id;
      if (free_ids.empty()) id = next++; else { id = free_ids.top(); free_ids.pop(); }
      ids[c.ptr] = id;
      if (c.align) std::printf("a %u %zu %zu\n", id, c.size, c.align);
      else std::printf("a %u %zu\n", id, c.size);
    } else {
      auto it = ids.find(c.ptr);
      if (it == ids.end()) continue;  // allocated before recording
      std::printf("f %u\n", it->second);
      free_ids.push(it->second);
      ids.erase(it);
    }
  }
  return 0;
}
CPP

echo "compiling the abseil recorder"
# shellcheck disable=SC2046
g++ -std=c++17 -O1 -o "$work/recorder" "$work/recorder.cpp" \
  $(pkg-config --cflags --libs absl_flat_hash_map absl_flat_hash_set absl_node_hash_map absl_node_hash_set absl_hashtablez_sampler)

cargo build --release --quiet
fragsim=target/release/fragsim

failures=0
cases=0
check() { # name count key_size key_align [value_size value_align]
  local name=$1 n=$2 ks=$3 ka=$4 vs=${5:-} va=${6:-}
  local args=(--key "$ks:$ka") rec_args=("$name" "$ks" "$ka")
  if [[ -n $vs ]]; then args+=(--value "$vs:$va"); rec_args+=("$vs" "$va"); fi
  rec_args+=("$n")
  "$work/recorder" "${rec_args[@]}" > "$work/real.txt"
  "$fragsim" container "$name" "${args[@]}" --count "$n" --trace-text "$work/model.txt" --format csv > /dev/null
  cases=$((cases + 1))
  # The table's last allocation is its final one: the destruction starts after the last "a".
  local last_a_real last_a_model
  last_a_real=$(grep -n '^a ' "$work/real.txt" | tail -1 | cut -d: -f1)
  last_a_model=$(grep -n '^a ' "$work/model.txt" | tail -1 | cut -d: -f1)
  if ! cmp -s <(head -n "$last_a_real" "$work/real.txt") <(head -n "$last_a_model" "$work/model.txt") \
     || ! cmp -s <(tail -n +"$((last_a_real + 1))" "$work/real.txt" | sort) \
                 <(tail -n +"$((last_a_model + 1))" "$work/model.txt" | sort); then
    echo "MISMATCH: $name ${args[*]} --count $n"
    diff <(cat "$work/real.txt") <(cat "$work/model.txt") | head -8
    failures=$((failures + 1))
  fi
}

for n in ${COUNTS:-1 7 8 100 5000}; do
  for key in "8 8" "4 4" "16 16" "3 1" "32 32" "100 4"; do
    # shellcheck disable=SC2086
    check absl-flat-hash-set "$n" $key
    # shellcheck disable=SC2086
    check absl-node-hash-set "$n" $key
    for value in "24 8" "1 1" "48 16" "256 32" "8 8"; do
      # shellcheck disable=SC2086
      check absl-flat-hash-map "$n" $key $value
      # shellcheck disable=SC2086
      check absl-node-hash-map "$n" $key $value
    done
  done
done

if (( failures > 0 )); then
  echo "check-cpp-containers: $failures of $cases abseil cases differ from the model"
  exit 1
fi
echo "check-cpp-containers: all $cases abseil cases equal the model's trace"
