/* Allocates and frees in a loop until a signal stops it: `until_signal MARKER MODE`. After its
 * first 100,000 calls (more than fill the recorder's 1 MiB buffer: some are in its raw file) it
 * creates the file MARKER (the test waits for it before signalling).
 * MODE `die`: SIGINT, SIGTERM and SIGHUP keep their default action (the program dies of the
 * signal); `ignore`: SIGINT is ignored (only SIGKILL stops it); `exit3`: a handler ends the
 * loop and the program frees what it holds and exits with status 3; `daemon`: as `exit3`, run
 * as a daemon (`daemon()`: the parent exits at once, the child leaves the process group). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: until_signal MARKER die|ignore|exit3|daemon\n");
        return 2;
    }
    if (strcmp(argv[2], "ignore") == 0) {
        signal(SIGINT, SIG_IGN);
    } else if (strcmp(argv[2], "exit3") == 0 || strcmp(argv[2], "daemon") == 0) {
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        signal(SIGHUP, on_signal);
        if (strcmp(argv[2], "daemon") == 0 && daemon(1, 1) != 0)
            return 4;
    }
    void *slots[64] = {0};
    for (unsigned long i = 0; !stop; i++) {
        free(slots[i % 64]);
        slots[i % 64] = malloc(16 + i % 500);
        if (i == 100000) {
            FILE *marker = fopen(argv[1], "w");
            fclose(marker);
        }
        if (i % 1000 == 0) {
            usleep(1000);
        }
    }
    for (int i = 0; i < 64; i++) {
        free(slots[i]);
    }
    return 3;
}
