// Large blocks allocated and freed in turn, linked with jemalloc and run with
// MALLOC_CONF=retain:false,dirty_decay_ms:0,muzzy_decay_ms:0: each allocation maps and each
// free unmaps, so the allocator's mappings (keyless events: they take their call's key) are
// half of the recorded events and some of the raw file's chunks start with one
// (tests/record_native.rs, decoding threads).
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    for (long i = 0; i < n; i++) {
        char *volatile p = malloc((4 << 20) + (i % 7) * 4096);
        p[0] = 1;
        free(p);
    }
    return 0;
}
