// std::thread workers (argv[2], default 4), each building a std::map<std::string, std::string>
// of N entries (argv[1], default 100000) and tearing it down: the recorder's C++ benchmark
// (scripts/bench-record-threads.sh runs it on 1 to 14 workers) and a real multi-threaded
// trace (data/traces/). Keys and values exceed the small-string buffer, so
// every entry is three allocations (node, key, value).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    std::vector<std::thread> workers;
    std::vector<size_t> sizes(threads);
    for (int t = 0; t < threads; t++) {
        workers.emplace_back([t, n, &sizes] {
            std::map<std::string, std::string> m;
            for (long i = 0; i < n; i++) {
                std::string key = "key-number-" + std::to_string(t) + "-" + std::to_string(i);
                m[key] = "value-of-the-entry-" + std::to_string(i * 7);
            }
            sizes[t] = m.size();
        });
    }
    for (auto &w : workers) w.join();
    size_t total = 0;
    for (size_t s : sizes) total += s;
    printf("%zu\n", total);
    return 0;
}
