/* Three call sites whose blame is known by hand (tests/blame.rs), all on one worker thread
 * so that they share an arena of their own and the worker's exit empties its cache:
 *   keep_one:    one long-lived 48-byte object per slab's worth (256 regions) of short-lived
 *                ones from scratch_one, kept to the end: each pins one 12 KiB slab;
 *   clean_one:   100 objects of 1000 bytes, all freed: nothing left;
 *   over_ask:    8 objects of 4097 bytes, one byte past the 4096 class: class 5120, kept.
 */
#include <pthread.h>
#include <stdlib.h>

#define SLABS 8
#define REGS 256
#define CLEAN 100
#define OVER 8

static void *kept[SLABS];
static void *over[OVER];
static void *scratch[SLABS * (REGS - 1)];
static void *clean[CLEAN];

__attribute__((noinline)) void *keep_one(void) { return malloc(48); }
__attribute__((noinline)) void *scratch_one(void) { return malloc(48); }
__attribute__((noinline)) void *clean_one(void) { return malloc(1000); }
__attribute__((noinline)) void *over_ask(void) { return malloc(4097); }

static void *work(void *arg) {
    (void)arg;
    int n = 0;
    for (int s = 0; s < SLABS; s++) {
        for (int i = 0; i < REGS - 1; i++)
            scratch[n++] = scratch_one();
        kept[s] = keep_one();
    }
    for (int i = 0; i < n; i++)
        free(scratch[i]);
    for (int i = 0; i < CLEAN; i++)
        clean[i] = clean_one();
    for (int i = 0; i < CLEAN; i++)
        free(clean[i]);
    for (int i = 0; i < OVER; i++)
        over[i] = over_ask();
    return NULL;
}

int main(void) {
    /* The main thread calls first, so it is bound to arena 0 and the worker gets arena 1. */
    void *marker = malloc(1);
    pthread_t t;
    if (pthread_create(&t, NULL, work, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    free(marker);
    return kept[0] && over[0] ? 0 : 1;
}
