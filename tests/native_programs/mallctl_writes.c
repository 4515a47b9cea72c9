/* jemalloc's mallctl writes that change what the allocator holds or how it serves a thread, as
 * servers make them (linked with libjemalloc.so.2 directly, no header): a manual arena from
 * `arenas.create`; workers, one after the other, that fill their caches, flush them
 * (`thread.tcache.flush`), move to another arena (`thread.arena`: the manual one, an automatic
 * one), purge it (`arena.<i>.purge`) and decay it (`arena.<i>.decay`), turn their cache off
 * and on again (`thread.tcache.enabled`); the main thread flushes its cache and purges the
 * manual arena by MIB (`mallctlnametomib`, then `mallctlbymib`); then every arena purged
 * (`arena.4096.purge`), and the real allocator's statistics on stderr as `stat NAME VALUE`
 * lines. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int mallctl(const char *name, void *old, size_t *old_len, void *new_value, size_t new_len);
int mallctlnametomib(const char *name, size_t *mib, size_t *mib_len);
int mallctlbymib(const size_t *mib, size_t mib_len, void *old, size_t *old_len, void *new_value,
                 size_t new_len);

static unsigned manual;

static size_t stat(const char *name) {
    size_t v = 0, len = sizeof v;
    mallctl(name, &v, &len, NULL, 0);
    return v;
}

static void arena_op(unsigned arena, const char *op) {
    char name[48];
    snprintf(name, sizeof name, "arena.%u.%s", arena, op);
    if (mallctl(name, NULL, NULL, NULL, 0) != 0) exit(3);
}

/* n blocks of small and large sizes; every other one freed (into the thread's cache). */
static void churn(void **keep, int n, int salt) {
    for (int i = 0; i < n; i++) keep[i] = malloc(i % 9 == 0 ? 20000 + 4096 * (i % 3) : 48 + ((i + salt) % 11) * 32);
    for (int i = 1; i < n; i += 2) free(keep[i]), keep[i] = NULL;
}

static void *worker(void *arg) {
    unsigned target = (unsigned)(uintptr_t)arg;
    enum { N = 1500 };
    static __thread void *keep[N];
    churn(keep, N, (int)target);
    if (mallctl("thread.tcache.flush", NULL, NULL, NULL, 0) != 0) exit(4);
    if (mallctl("thread.arena", NULL, NULL, &target, sizeof target) != 0) exit(5);
    void *more[N];
    churn(more, N, 3);
    arena_op(target, "purge");
    arena_op(target, "decay");
    bool off = false, on = true;
    if (mallctl("thread.tcache.enabled", NULL, NULL, &off, sizeof off) != 0) exit(6);
    for (int i = 0; i < N; i += 8) free(keep[i]), keep[i] = malloc(700);
    if (mallctl("thread.tcache.enabled", NULL, NULL, &on, sizeof on) != 0) exit(6);
    for (int i = 0; i < N; i += 2) free(keep[i]);
    if (mallctl("thread.tcache.flush", NULL, NULL, NULL, 0) != 0) exit(4);
    for (int i = 0; i < N; i += 4) free(more[i]);
    return NULL;
}

int main(void) {
    size_t len = sizeof manual;
    if (mallctl("arenas.create", &manual, &len, NULL, 0) != 0) return 1;
    static void *keep[2000];
    churn(keep, 2000, 0);
    unsigned targets[] = {manual, 2, manual};
    for (int k = 0; k < 3; k++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)(uintptr_t)targets[k]) != 0) return 2;
        pthread_join(t, NULL);
    }
    size_t flush[3], flush_len = 3, purge[3], purge_len = 3;
    if (mallctlnametomib("thread.tcache.flush", flush, &flush_len) != 0) return 7;
    if (mallctlnametomib("arena.0.purge", purge, &purge_len) != 0) return 7;
    free(keep[0]);
    if (mallctlbymib(flush, flush_len, NULL, NULL, NULL, 0) != 0) return 8;
    purge[1] = manual;
    if (mallctlbymib(purge, purge_len, NULL, NULL, NULL, 0) != 0) return 8;
    if (mallctl("thread.tcache.flush", NULL, NULL, NULL, 0) != 0) return 4;
    arena_op(4096, "purge");
    uint64_t epoch = 1;
    len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    const char *names[] = {"stats.allocated", "stats.active", "stats.resident"};
    for (int i = 0; i < 3; i++) fprintf(stderr, "stat %s %zu\n", names[i], stat(names[i]));
    return 0;
}
