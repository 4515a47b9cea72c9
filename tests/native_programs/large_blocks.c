/* Large blocks whose size jemalloc 5.3.0 rounds to a size class (33,000 -> 40,960 bytes) and
 * 5.3.1 to whole pages (36,864), beside small ones, half of each freed; then the real
 * allocator's statistics on stderr as `stat NAME VALUE` lines (linked with libjemalloc.so.2
 * directly, no header). */
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
    enum { N = 400 };
    static void *big[N], *small[N];
    for (int i = 0; i < N; i++) {
        big[i] = malloc(33000);
        small[i] = malloc(24 + (i % 9) * 40);
    }
    for (int i = 0; i < N; i += 2) free(big[i]), free(small[i]);
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    const char *names[] = {"stats.allocated", "stats.active"};
    for (int i = 0; i < 2; i++) fprintf(stderr, "stat %s %zu\n", names[i], stat(names[i]));
    return 0;
}
