/* fork, exec, exit from a worker thread, a fatal signal: chosen by argv[1]. Marker sizes tell
 * the test which process or step made an allocation. "exec-self" keeps 1,000 objects live and
 * execs itself ("exec-again"), which makes the same 1,000: without address randomisation
 * (`setarch -R`) at the same addresses, which the exec has released (both print the first). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *exit_from_worker(void *arg) {
    (void)arg;
    free(malloc(55555));
    exit(3);
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    free(malloc(11111));
    if (!strcmp(what, "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            free(malloc(22222));
            exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        free(malloc(33333));
    } else if (!strcmp(what, "alloc")) {
        free(malloc(44444));
    } else if (!strcmp(what, "thread-exit")) {
        pthread_t t;
        pthread_create(&t, NULL, exit_from_worker, NULL);
        pthread_join(t, NULL);
    } else if (!strcmp(what, "exec-self") || !strcmp(what, "exec-again")) {
        static void *kept[1000];
        for (int i = 0; i < 1000; i++)
            kept[i] = malloc(48);
        fprintf(stderr, "%p\n", kept[0]);
        if (!strcmp(what, "exec-self")) {
            char *again[] = {argv[0], "exec-again", NULL};
            execv("/proc/self/exe", again);
            return 1;
        }
    } else if (!strcmp(what, "segv")) {
        void *keep = malloc(66666);
        fprintf(stderr, "%p\n", keep);
        raise(SIGSEGV);
    }
    return 0;
}
