/* A heap near 1 GB on the system jemalloc (linked with libjemalloc.so.2 directly, no header
 * needed): 40,000 live 20 KiB blocks, every other one freed, 20,000 small blocks, then the
 * real allocator's statistics on stderr as `stat NAME VALUE` lines. A heap this size spans a
 * 1 GiB boundary of the address space about as often as not: one more radix-tree leaf (2 MiB
 * of jemalloc's metadata on a 48-bit build) where the kernel put it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int mallctl(const char *name, void *old, size_t *old_len, void *new_value, size_t new_len);

static size_t stat(const char *name) {
    size_t v = 0, len = sizeof v;
    mallctl(name, &v, &len, NULL, 0);
    return v;
}

int main(void) {
    enum { N = 40000 };
    static void *p[N];
    for (int i = 0; i < N; i++) p[i] = malloc(20480);
    for (int i = 0; i < N; i += 2) free(p[i]);
    for (int i = 0; i < N / 2; i++) p[2 * i] = malloc(100);
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    const char *names[] = {"stats.allocated", "stats.active", "stats.metadata",
                           "stats.resident", "stats.mapped"};
    for (int i = 0; i < 5; i++) fprintf(stderr, "stat %s %zu\n", names[i], stat(names[i]));
    return 0;
}
