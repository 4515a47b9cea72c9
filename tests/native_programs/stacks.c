/* Allocations from two call sites, each taken three times, for the --stacks test. */
#include <stdlib.h>

__attribute__((noinline)) void *alloc_here(size_t n) { return malloc(n); }
__attribute__((noinline)) void *alloc_there(size_t n) { return malloc(n); }

int main(void) {
    for (int i = 0; i < 3; i++) {
        free(alloc_here(12345));
        free(alloc_there(23456));
    }
    return 0;
}
