/* Frames of every shape the recorder's unwind rules meet, for the --stacks check (each stack
 * taken both by the rules and by libunwind must be the same): a frame with a variable-length
 * array (its caller's frame found from rbp), deep recursion, a signal handler's allocation
 * (a signal frame: libunwind's), frames from another thread. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

__attribute__((noinline)) void *with_vla(int n) {
    char vla[n];
    memset(vla, n, n);
    sink = vla;
    void *p = malloc(vla[n - 1] + 100);
    sink = vla;
    return p;
}

__attribute__((noinline)) int deep(int depth) {
    if (depth == 0) {
        free(with_vla(17));
        /* Through the volatile sink: a malloc freed at once is elided at -O2. */
        sink = malloc(33);
        free(sink);
        return 1;
    }
    return deep(depth - 1) + 1;
}

static void handler(int sig) {
    (void)sig;
    sink = malloc(4321);
    free(sink);
}

static void *worker(void *arg) {
    for (int i = 0; i < 100; i++) {
        deep(i % 90);
    }
    return arg;
}

int main(void) {
    signal(SIGUSR1, handler);
    for (int i = 0; i < 3; i++) {
        raise(SIGUSR1);
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, worker, NULL);
    }
    worker(NULL);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
    return 0;
}
