/* jemalloc's own API, as a server routing its long-lived objects would call it (linked with
 * libjemalloc.so.2 directly, no header): a manual arena from `arenas.create`, long-lived
 * objects placed there without the thread cache (MALLOCX_ARENA | MALLOCX_TCACHE_NONE) between
 * short-lived ones from malloc, some through the cache into the manual arena, some aligned,
 * frees through dallocx/sdallocx with and without the cache; then the real allocator's
 * statistics on stderr as `stat NAME VALUE` lines. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int mallctl(const char *name, void *old, size_t *old_len, void *new_value, size_t new_len);
void *mallocx(size_t size, int flags);
void dallocx(void *p, int flags);
void sdallocx(void *p, size_t size, int flags);

#define ARENA(a) ((int)(((unsigned)(a) + 1) << 20))
#define TCACHE_NONE (1 << 8)
#define LG_ALIGN(la) (la)

static size_t stat(const char *name) {
    size_t v = 0, len = sizeof v;
    mallctl(name, &v, &len, NULL, 0);
    return v;
}

int main(void) {
    unsigned arena = 0;
    size_t len = sizeof arena;
    if (mallctl("arenas.create", &arena, &len, NULL, 0) != 0) return 1;
    enum { N = 3000 };
    static void *keep[N], *temp[N];
    for (int i = 0; i < N; i++) {
        temp[i] = malloc(40 + (i % 7) * 24);
        switch (i % 4) {
        case 0: keep[i] = mallocx(64 + (i % 5) * 16, ARENA(arena) | TCACHE_NONE); break;
        case 1: keep[i] = mallocx(96, ARENA(arena)); break;
        case 2: keep[i] = mallocx(200, TCACHE_NONE); break;
        default: keep[i] = mallocx(20000, ARENA(arena) | TCACHE_NONE | LG_ALIGN(12)); break;
        }
        if (i % 3 == 2) free(temp[i - 1]), temp[i - 1] = NULL;
    }
    for (int i = 0; i < N; i += 2) {
        if (i % 4 == 0) dallocx(keep[i], TCACHE_NONE);
        else sdallocx(keep[i], 200, 0);
        keep[i] = NULL;
    }
    uint64_t epoch = 1;
    len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    const char *names[] = {"stats.allocated", "stats.active", "stats.resident"};
    for (int i = 0; i < 3; i++) fprintf(stderr, "stat %s %zu\n", names[i], stat(names[i]));
    return 0;
}
