// The C++ workload behind data/traces/cpp-maps.trace: std::map and std::unordered_map
// with string values, filled, half erased and refilled (fixed seed, so runs repeat).
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

int main() {
    std::mt19937 rng(42);
    std::map<int, std::string> ordered;
    std::unordered_map<std::string, int> hashed;
    std::vector<int> keys;
    for (int i = 0; i < 30000; i++) {
        int k = static_cast<int>(rng() % 1000000);
        // Lengths 0..63: short ones stay in the string (SSO), longer ones allocate.
        std::string value(rng() % 64, 'x');
        ordered[k] = value;
        hashed["key-" + std::to_string(k) + value.substr(0, rng() % 24)] = i;
        keys.push_back(k);
    }
    for (size_t i = 0; i < keys.size(); i += 2) {
        ordered.erase(keys[i]);
    }
    for (int i = 0; i < 10000; i++) {
        ordered[static_cast<int>(rng() % 1000000)] = std::string(rng() % 200, 'y');
    }
    std::printf("%zu %zu\n", ordered.size(), hashed.size());
    return 0;
}
