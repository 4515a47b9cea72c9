/* Calls a recorder cannot see, as a program that mixes allocators makes them: glibc's own
 * entry points (`__libc_malloc`, `__libc_free`) bypass the recorder's hooks, so the trace
 * holds frees of addresses never allocated, allocations at addresses still live, and
 * reallocs of unknown blocks: each one the converter repairs (tests/record_native.rs).
 * `repairs [N]`: N rounds (default 1000). */
#include <stdlib.h>

extern void *__libc_malloc(size_t size);
extern void __libc_free(void *ptr);

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 1000;
    for (int i = 0; i < rounds; i++) {
        /* A free of an address the trace never saw allocated. */
        free(__libc_malloc(24));
        /* Its free unseen: the next block at that address is a duplicate. */
        void *b = malloc(40);
        __libc_free(b);
        void *c = malloc(40);
        /* A realloc of a block the trace never saw allocated. */
        void *d = realloc(__libc_malloc(56), 200);
        free(c);
        free(d);
    }
    return 0;
}
