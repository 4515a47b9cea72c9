/* Turns jemalloc's background threads on with mallctl between two phases of allocations
 * (linked with -ljemalloc). Starting the thread, glibc's pthread_create allocates the thread's
 * vector with calloc while jemalloc is inside mallctl: a reentrant call, which jemalloc serves
 * from arena 0 without the thread cache. At the end: malloc(54321) and free (the marker), then
 * `RC ALLOCATED ACTIVE` (mallctl's return code, stats.allocated, stats.active) through
 * write(2), so nothing allocates between the marker and the statistics. */
#include <jemalloc/jemalloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define N 2000
static void *keep[N];

int main(void) {
    for (int i = 0; i < N / 2; i++) keep[i] = malloc(16 + (i % 50) * 16);
    bool on = true;
    int rc = mallctl("background_thread", NULL, NULL, &on, sizeof on);
    for (int i = N / 2; i < N; i++) keep[i] = malloc(16 + (i % 60) * 16);
    for (int i = 0; i < N; i += 2) free(keep[i]);
    void *volatile marker = malloc(54321);
    free(marker);
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    size_t allocated = 0, active = 0;
    len = sizeof allocated;
    mallctl("stats.allocated", &allocated, &len, NULL, 0);
    mallctl("stats.active", &active, &len, NULL, 0);
    char line[100];
    int n = snprintf(line, sizeof line, "%d %zu %zu\n", rc, allocated, active);
    if (write(1, line, (size_t)n) != n) return 3;
    return 0;
}
