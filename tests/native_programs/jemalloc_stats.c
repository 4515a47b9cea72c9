/* A fragmenting workload on jemalloc (linked with -ljemalloc), then every statistic of the
 * real allocator. Small and large sizes, calloc, realloc, aligned blocks, half of them freed,
 * and two threads one after the other (each joined before the next starts, so the order of
 * calls is fixed), one call in a signal handler. At the end: malloc(MARKER) and free, then the heap's statistics read with
 * mallctl and printed as `stat NAME VALUE` lines, then malloc_stats_print's JSON (every
 * arena's and bin's statistics) after a `json` line. Output goes through write(2) only, so
 * nothing allocates between the marker's free and the last statistic. */
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MARKER 54321
#define SLOTS 4096

static void *slots[SLOTS];
/* Slots holding an aligned block: freed, never realloc'd (fragsim's models keep an aligned
 * block's alignment through realloc, where jemalloc's realloc drops it). */
static char aligned[SLOTS];

static void work(unsigned long seed, int rounds) {
    unsigned long x = seed;
    for (int r = 0; r < rounds; r++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        int s = (x >> 33) % SLOTS;
        /* Mostly small, some large (up to 96 KiB). */
        size_t size = (x >> 60) == 0 ? 16384 + (x >> 20) % 81920 : 1 + (x >> 40) % 3500;
        if (slots[s]) {
            if (((x >> 19) & 3) || aligned[s]) {
                free(slots[s]);
                slots[s] = NULL;
            } else {
                slots[s] = realloc(slots[s], size);
            }
        } else {
            aligned[s] = ((x >> 21) & 3) == 1;
            switch ((x >> 21) & 3) {
            case 0: slots[s] = calloc(1, size); break;
            case 1: slots[s] = aligned_alloc(64, (size + 63) & ~(size_t)63); break;
            default: slots[s] = malloc(size); break;
            }
        }
    }
}

/* A stack through a signal frame: only libunwind can take it, so `--stacks` loads it here. */
static void on_signal(int sig) {
    (void)sig;
    free(slots[1]);
    slots[1] = malloc(777);
    aligned[1] = 0;
}

static void *thread_main(void *arg) {
    work((unsigned long)(uintptr_t)arg, 20000);
    return NULL;
}

static void out(const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(1, s, n);
        if (w <= 0) _exit(3);
        s += w;
        n -= (size_t)w;
    }
}

static void json(void *unused, const char *s) {
    (void)unused;
    out(s, strlen(s));
}

int main(void) {
    work(1, 30000);
    for (unsigned long t = 2; t < 4; t++) {
        pthread_t th;
        pthread_create(&th, NULL, thread_main, (void *)(uintptr_t)t);
        pthread_join(th, NULL);
    }
    signal(SIGUSR1, on_signal);
    raise(SIGUSR1);
    /* Free every other slot: holes in the slabs. */
    for (int s = 0; s < SLOTS; s += 2) {
        free(slots[s]);
        slots[s] = NULL;
    }
    /* volatile: the compiler may drop a malloc whose block is only freed. */
    void *volatile marker = malloc(MARKER);
    free(marker);
    uint64_t epoch = 1;
    size_t len = sizeof(epoch);
    mallctl("epoch", &epoch, &len, &epoch, len);
    const char *names[] = {"stats.allocated", "stats.active", "stats.metadata",
                           "stats.resident", "stats.mapped", "stats.retained"};
    size_t values[6];
    for (int i = 0; i < 6; i++) {
        len = sizeof(size_t);
        if (mallctl(names[i], &values[i], &len, NULL, 0) != 0) values[i] = (size_t)-1;
    }
    char line[128];
    for (int i = 0; i < 6; i++) {
        int n = snprintf(line, sizeof line, "stat %s %zu\n", names[i], values[i]);
        out(line, (size_t)n);
    }
    out("json\n", 5);
    malloc_stats_print(json, NULL, "J");
    return 0;
}
