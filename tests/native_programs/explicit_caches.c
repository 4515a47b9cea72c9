/* Explicit thread caches through jemalloc's API (linked with -ljemalloc): `tcache.create`,
 * calls with MALLOCX_TCACHE(c), `tcache.flush` (the cache is made again at its next use),
 * `tcache.destroy` (its index is given again by the next `tcache.create`), a second thread
 * with a cache of its own, and rallocx with MALLOCX_TCACHE_NONE, MALLOCX_TCACHE(c) and
 * MALLOCX_ARENA of a manual arena. With an argument, background threads are turned on by
 * `mallctl` midway. At the end, `stat NAME VALUE` on stderr (unbuffered: nothing allocates)
 * for stats.allocated, active, metadata, mapped and resident. Linked with libjemalloc.so.2
 * directly: no header (jemalloc.h's declarations and flag macros written out). */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int mallctl(const char *name, void *old, size_t *old_len, void *new_value, size_t new_len);
void *mallocx(size_t size, int flags);
void *rallocx(void *p, size_t size, int flags);
void dallocx(void *p, int flags);

#define MALLOCX_ARENA(a) ((int)(((unsigned)(a) + 1) << 20))
#define MALLOCX_TCACHE(tc) ((int)(((unsigned)(tc) + 2) << 8))
#define MALLOCX_TCACHE_NONE MALLOCX_TCACHE(-1)

static unsigned create(void) {
    unsigned c;
    size_t len = sizeof c;
    if (mallctl("tcache.create", &c, &len, NULL, 0) != 0) exit(4);
    return c;
}

static void end(const char *name, unsigned c) {
    if (mallctl(name, NULL, NULL, &c, sizeof c) != 0) exit(5);
}

/* Waits (5 s at most) until stats.background_thread.num_threads has held still for 100 ms. */
static void settle_background_threads(void) {
    size_t last = 0, same = 0;
    for (int i = 0; i < 250 && same < 5; i++) {
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
        uint64_t epoch = 1;
        size_t n = 0, len = sizeof epoch;
        mallctl("epoch", &epoch, &len, &epoch, len);
        len = sizeof n;
        mallctl("stats.background_thread.num_threads", &n, &len, NULL, 0);
        same = (n == last && n > 0) ? same + 1 : 0;
        last = n;
    }
}

static size_t size_of(int i) {
    /* Small classes, and large ones up to and above tcache_max (32 KiB by default). */
    static const size_t large[] = {16384, 20000, 28000, 40000};
    return i % 7 == 6 ? large[(i / 7) % 4] : (size_t)(16 + (i % 40) * 16);
}

static void *worker(void *arg) {
    (void)arg;
    unsigned c = create();
    void *p[300];
    for (int i = 0; i < 300; i++) p[i] = mallocx(size_of(i), MALLOCX_TCACHE(c));
    for (int i = 0; i < 300; i += 2) dallocx(p[i], MALLOCX_TCACHE(c));
    for (int i = 1; i < 300; i += 2) free(p[i]);
    end("tcache.destroy", c);
    return NULL;
}

int main(int argc, char **argv) {
    static void *keep[400], *q[500], *r[100];
    for (int i = 0; i < 400; i++) keep[i] = malloc(size_of(i));
    unsigned a = create();
    for (int i = 0; i < 500; i++) q[i] = mallocx(size_of(i), MALLOCX_TCACHE(a));
    for (int i = 0; i < 500; i += 3) dallocx(q[i], MALLOCX_TCACHE(a));
    end("tcache.flush", a);
    for (int i = 0; i < 100; i++) r[i] = mallocx(48 + (i % 3) * 16, MALLOCX_TCACHE(a));
    unsigned b = create();
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0) return 6;
    unsigned arena;
    size_t len = sizeof arena;
    if (mallctl("arenas.create", &arena, &len, NULL, 0) != 0) return 7;
    void *g = mallocx(20000, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
    g = rallocx(g, 40000, MALLOCX_TCACHE_NONE);
    g = rallocx(g, 100, MALLOCX_TCACHE(b));
    g = rallocx(g, 30000, MALLOCX_ARENA(arena));
    g = rallocx(g, 200, MALLOCX_TCACHE(b));
    if (argc > 1) {
        bool on = true;
        if (mallctl("background_thread", NULL, NULL, &on, sizeof on) != 0) return 8;
        /* Thread 0 starts its siblings on its own time (glibc allocating as it does): wait
         * until their count holds still before the statistics are read, as the recording
         * goes on until the exit. */
        settle_background_threads();
    }
    for (int i = 1; i < 500; i += 3) dallocx(q[i], MALLOCX_TCACHE(b));
    end("tcache.destroy", a);
    unsigned d = create();
    for (int i = 0; i < 100; i += 2) dallocx(r[i], MALLOCX_TCACHE(d));
    for (int i = 0; i < 400; i += 2) free(keep[i]);
    dallocx(g, MALLOCX_TCACHE(d));
    uint64_t epoch = 1;
    len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    const char *names[] = {"stats.allocated", "stats.active", "stats.metadata", "stats.mapped",
                           "stats.resident"};
    for (int i = 0; i < 5; i++) {
        size_t v = 0;
        len = sizeof v;
        mallctl(names[i], &v, &len, NULL, 0);
        fprintf(stderr, "stat %s %zu\n", names[i], v);
    }
    return 0;
}
