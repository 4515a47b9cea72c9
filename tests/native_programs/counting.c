/* Four threads at once, each making a known number of allocator calls (mixed malloc, calloc,
 * realloc, free with sizes from a per-thread LCG) and printing its count; each thread's first
 * allocation is malloc(100000 + i) so the test can tell the threads apart. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ROUNDS 20000
static long counts[THREADS];

static void *work(void *arg) {
    long i = (long)arg, n = 0;
    unsigned long x = 12345 + i;
    void *slots[64] = {0};
    void *first = malloc(100000 + i);
    n++;
    for (int r = 0; r < ROUNDS; r++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        int s = (x >> 33) % 64;
        size_t size = 1 + (x >> 40) % 3000;
        if (slots[s]) {
            if ((x >> 20) & 1) {
                slots[s] = realloc(slots[s], size);
            } else {
                free(slots[s]);
                slots[s] = NULL;
            }
        } else {
            slots[s] = ((x >> 21) & 1) ? malloc(size) : calloc(1, size);
        }
        n++;
    }
    for (int s = 0; s < 64; s++)
        if (slots[s]) {
            free(slots[s]);
            n++;
        }
    free(first);
    n++;
    counts[i] = n;
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)i);
    for (long i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) printf("%d %ld\n", i, counts[i]);
    return 0;
}
