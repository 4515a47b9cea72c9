/* jemalloc's background thread 0 starting its siblings (linked with libjemalloc.so.2, no
 * header): three threads allocate (all alive: arenas 1 to 3); then the main thread turns
 * background threads on by mallctl, and thread 0 (named jemalloc_bg_thd) creates one
 * background thread per arena group from its own loop, where glibc's pthread_create
 * allocates: calls of jemalloc's own thread, which jemalloc serves reentrantly (arena 0, no
 * thread cache, no cache block for that thread). The workers stay alive meanwhile (glibc
 * would hand an exited thread's stack, and its vector, to a new one). Then they exit, and the
 * statistics go to stderr as `stat NAME VALUE` lines. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int mallctl(const char *name, void *old, size_t *old_len, void *new_value, size_t new_len);

static pthread_barrier_t all_started, enabled;

static void *worker(void *arg) {
    void **keep = arg;
    /* All three alive before any binds: each takes an arena of its own. */
    pthread_barrier_wait(&all_started);
    for (int i = 0; i < 64; i++) keep[i] = malloc(24 + (i % 8) * 40);
    /* Alive until the background threads are up: glibc cannot hand their stacks over. */
    pthread_barrier_wait(&enabled);
    return NULL;
}

int main(void) {
    static void *keep[3][64];
    pthread_t t[3];
    pthread_barrier_init(&all_started, NULL, 3);
    pthread_barrier_init(&enabled, NULL, 4);
    for (int k = 0; k < 3; k++)
        if (pthread_create(&t[k], NULL, worker, keep[k]) != 0) return 2;
    /* The workers' mallocs before the write (their arenas exist then). */
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    bool on = true;
    if (mallctl("background_thread", NULL, NULL, &on, sizeof on) != 0) return 3;
    /* Thread 0 starts its siblings on its own time: wait (5 s at most) for all four. */
    for (int i = 0; i < 250; i++) {
        size_t epoch = 1, n = 0, len = sizeof epoch;
        mallctl("epoch", &epoch, &len, &epoch, len);
        len = sizeof n;
        mallctl("stats.background_thread.num_threads", &n, &len, NULL, 0);
        if (n >= 4) break;
        struct timespec tick = {0, 20 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    pthread_barrier_wait(&enabled);
    for (int k = 0; k < 3; k++)
        if (pthread_join(t[k], NULL) != 0) return 2;
    size_t epoch = 1, len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    const char *names[] = {"stats.allocated", "stats.active", "stats.background_thread.num_threads"};
    for (int i = 0; i < 3; i++) {
        size_t v = 0;
        len = sizeof v;
        mallctl(names[i], &v, &len, NULL, 0);
        fprintf(stderr, "stat %s %zu\n", names[i], v);
    }
    return 0;
}
