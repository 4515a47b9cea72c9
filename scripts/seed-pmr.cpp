// The second seed's C++ benchmark, reproduced (C++17): M vectors of K ints built with
// `resize(M, vector(K))` and reset, three ways:
//   std        std::vector<std::vector<int>> (one malloc and free per inner vector)
//   monotonic  std::pmr vectors over a monotonic_buffer_resource on a preallocated buffer
//   nofree     the same resource, through an allocator whose deallocate does nothing
// The preallocated buffer is allocated once per process and reused by every run, as in the
// seed; monotonic-fresh and nofree-fresh allocate it anew in each build (new[]) and free it in
// the reset (delete[]), so every run meets fresh pages. Each run prints one JSON line: build
// and reset times and the page faults each phase took (getrusage), so the first (cold) run
// can be told from the later (warm) ones.
//
// Usage: seed-pmr STRATEGY [VECTORS] [ELEMENTS] [RUNS]   (built and run by seed-pmr.sh)
#include <sys/resource.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <utility>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace {

// std::pmr::polymorphic_allocator with deallocate a no-op: objects are still destroyed, the
// memory goes back only when the resource is released.
template <class T>
struct no_free_allocator {
  using value_type = T;
  std::pmr::memory_resource* resource;

  no_free_allocator(std::pmr::memory_resource* r) noexcept : resource(r) {}  // NOLINT: like pmr
  template <class U>
  no_free_allocator(const no_free_allocator<U>& other) noexcept : resource(other.resource) {}

  T* allocate(std::size_t n) {
    return static_cast<T*>(resource->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T*, std::size_t) noexcept {}

  // Uses-allocator construction (C++17 has no std::uninitialized_construct_using_allocator):
  // inner vectors get this allocator, as pmr containers do.
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (std::uses_allocator_v<U, no_free_allocator> &&
                  std::is_constructible_v<U, Args..., const no_free_allocator&>) {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)..., *this);
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }

  no_free_allocator select_on_container_copy_construction() const {
    return no_free_allocator(std::pmr::get_default_resource());
  }
};

template <class T, class U>
bool operator==(const no_free_allocator<T>& a, const no_free_allocator<U>& b) noexcept {
  return a.resource == b.resource || a.resource->is_equal(*b.resource);
}
template <class T, class U>
bool operator!=(const no_free_allocator<T>& a, const no_free_allocator<U>& b) noexcept {
  return !(a == b);
}

template <class T>
using nofree_vector = std::vector<T, no_free_allocator<T>>;

long faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt + usage.ru_majflt;
}

using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

struct Phase {
  double us;
  long faults;
};

struct Run {
  Phase build;
  Phase reset;
};

using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

// jemalloc's mallctl when jemalloc serves malloc (LD_PRELOAD'ed, it exports the symbol).
mallctl_fn find_mallctl() {
  return reinterpret_cast<mallctl_fn>(dlsym(RTLD_DEFAULT, "mallctl"));
}

// jemalloc's dirty pages (all arenas) and mapped bytes right now; -1 without jemalloc.
std::pair<long, long> jemalloc_pages() {
  mallctl_fn mallctl = find_mallctl();
  if (mallctl == nullptr) return {-1, -1};
  std::uint64_t epoch = 1;
  std::size_t len = sizeof(epoch);
  mallctl("epoch", &epoch, &len, &epoch, len);
  std::size_t pdirty = 0, mapped = 0;
  len = sizeof(std::size_t);
  if (mallctl("stats.arenas.4096.pdirty", &pdirty, &len, nullptr, 0) != 0) return {-1, -1};
  len = sizeof(std::size_t);
  if (mallctl("stats.mapped", &mapped, &len, nullptr, 0) != 0) return {-1, -1};
  return {static_cast<long>(pdirty), static_cast<long>(mapped)};
}

// The allocator actually serving malloc.
std::string allocator_name() {
  mallctl_fn mallctl = find_mallctl();
  if (mallctl == nullptr) return "glibc";
  const char* version = nullptr;
  std::size_t len = sizeof(version);
  std::string name = "jemalloc";
  if (mallctl("version", &version, &len, nullptr, 0) == 0 && version != nullptr) {
    name += std::string(" ") + version;
  }
  ssize_t dirty_decay_ms = 0;
  len = sizeof(dirty_decay_ms);
  if (mallctl("opt.dirty_decay_ms", &dirty_decay_ms, &len, nullptr, 0) == 0 &&
      dirty_decay_ms < 0) {
    name += " decay-off";
  }
  return name;
}

template <class Build, class Reset>
Run timed(Build build, Reset reset) {
  long f0 = faults();
  auto t0 = Clock::now();
  build();
  auto t1 = Clock::now();
  long f1 = faults();
  reset();
  auto t2 = Clock::now();
  long f2 = faults();
  return Run{{micros(t1 - t0), f1 - f0}, {micros(t2 - t1), f2 - f1}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s std|monotonic|nofree|monotonic-fresh|nofree-fresh [VECTORS] "
                 "[ELEMENTS] [RUNS]\n",
                 argv[0]);
    return 2;
  }
  std::string strategy = argv[1];
  bool fresh = false;
  if (strategy == "monotonic-fresh" || strategy == "nofree-fresh") {
    fresh = true;
    strategy.resize(strategy.size() - std::strlen("-fresh"));
  }
  auto number = [&](int i, long fallback) -> long {
    if (argc <= i) return fallback;
    char* end = nullptr;
    long v = std::strtol(argv[i], &end, 10);
    if (*end != '\0' || v <= 0 || v > 100'000'000) {
      std::fprintf(stderr, "bad number '%s': need 1 to 100000000\n", argv[i]);
      std::exit(2);
    }
    return v;
  };
  const std::size_t m = number(2, 1'000'000);
  const std::size_t k = number(3, 100);
  const long runs = number(4, 6);
  if (strategy != "std" && strategy != "monotonic" && strategy != "nofree") {
    std::fprintf(stderr,
                 "bad strategy '%s': use std, monotonic, nofree, monotonic-fresh or "
                 "nofree-fresh\n",
                 argv[1]);
    return 2;
  }

  // The seed's preallocated buffer: outer array plus every inner array, plus slack for
  // alignment; allocated once, untouched until the first run writes it.
  const std::size_t header = std::max(sizeof(std::pmr::vector<int>), sizeof(nofree_vector<int>));
  const std::size_t buffer_bytes = m * (header + k * sizeof(int)) + (1 << 20);
  std::unique_ptr<std::byte[]> buffer;
  if (strategy != "std" && !fresh) buffer.reset(new std::byte[buffer_bytes]);

  const std::string allocator = allocator_name();
  for (long run = 1; run <= runs; ++run) {
    Run r{};
    if (strategy == "std") {
      std::optional<std::vector<std::vector<int>>> vectors;
      r = timed(
          [&] {
            vectors.emplace();
            vectors->resize(m, std::vector<int>(k));
          },
          [&] { vectors.reset(); });
    } else if (strategy == "monotonic") {
      std::optional<std::pmr::monotonic_buffer_resource> mbr;
      std::optional<std::pmr::vector<std::pmr::vector<int>>> vectors;
      r = timed(
          [&] {
            if (fresh) buffer.reset(new std::byte[buffer_bytes]);
            mbr.emplace(buffer.get(), buffer_bytes);
            vectors.emplace(&*mbr);
            vectors->resize(m, std::pmr::vector<int>(k));
          },
          [&] {
            vectors.reset();
            mbr.reset();
            if (fresh) buffer.reset();
          });
    } else {
      std::optional<std::pmr::monotonic_buffer_resource> mbr;
      std::optional<nofree_vector<nofree_vector<int>>> vectors;
      r = timed(
          [&] {
            if (fresh) buffer.reset(new std::byte[buffer_bytes]);
            mbr.emplace(buffer.get(), buffer_bytes);
            vectors.emplace(no_free_allocator<nofree_vector<int>>(&*mbr));
            vectors->resize(m, nofree_vector<int>(k, std::pmr::get_default_resource()));
          },
          [&] {
            vectors.reset();
            mbr.reset();
            if (fresh) buffer.reset();
          });
    }
    auto [pdirty, mapped] = jemalloc_pages();
    std::printf(
        "{\"program\":\"seed-pmr\",\"allocator\":\"%s\",\"strategy\":\"%s\",\"vectors\":%zu,"
        "\"elements\":%zu,\"run\":%ld,\"build_us\":%.1f,\"reset_us\":%.1f,"
        "\"build_faults\":%ld,\"reset_faults\":%ld,\"jemalloc_pdirty\":%ld,"
        "\"jemalloc_mapped\":%ld}\n",
        allocator.c_str(), argv[1], m, k, run, r.build.us, r.reset.us, r.build.faults,
        r.reset.faults, pdirty, mapped);
    std::fflush(stdout);
  }
  return 0;
}
