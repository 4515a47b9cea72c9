/* fork, exec, exit from a worker thread, a fatal signal: chosen by argv[1]. Marker sizes tell
 * the test which process or step made an allocation. "exec-self" keeps 1,000 objects live and
 * execs itself ("exec-again"), which makes the same 1,000: without address randomisation
 * (`setarch -R`) at the same addresses, which the exec has released (both print the first).
 * "execl-self", "execle-self" and "execlp-self" exec with the list forms (8 arguments, some of
 * them on the stack), "syscall-self" with the raw system call, which no wrapper sees (after
 * 100,000 objects, so that some of them were written before it). "vfork-exec" and "vfork-fail"
 * keep 1,000 objects and vfork a child that shares their memory until it execs or exits: it
 * closes the descriptors above 2 (as Python's subprocess does), its first exec fails (as a PATH search's first tries do), then "vfork-exec" execs this program
 * ("alloc") and "vfork-fail" calls _exit(127); the parent then frees the 1,000 and makes and
 * frees 1,000 more. "close-all FILE" keeps 1,000 objects, closes every descriptor above 2 (as a
 * daemon does), opens FILE (the lowest free number), frees the 1,000, makes and frees 100,000
 * more and writes one line to FILE. "sigint-if-default" installs its SIGINT handler only where the
 * signal is at its default action, as CPython does, raises SIGINT and exits 0 if its handler
 * ran; "sigint-if-default die" then sets the default again, checks it reads so, and dies of a
 * second SIGINT, as CPython does after an unhandled KeyboardInterrupt. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t got_int;

static void on_int(int sig) {
    (void)sig;
    got_int = 1;
}

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
    } else if (strstr(what, "-self") || !strcmp(what, "exec-again")) {
        static void *kept[100000];
        int n = strcmp(what, "syscall-self") ? 1000 : 100000;
        for (int i = 0; i < n; i++)
            kept[i] = malloc(333);
        fprintf(stderr, "%p\n", kept[0]);
        const char *self = "/proc/self/exe";
        char *again[] = {argv[0], "exec-again", "3", "4", "5", "6", "7", "8", NULL};
        if (!strcmp(what, "exec-self"))
            execv(self, again);
        else if (!strcmp(what, "execl-self"))
            execl(self, argv[0], "exec-again", "3", "4", "5", "6", "7", "8", (char *)NULL);
        else if (!strcmp(what, "execle-self"))
            execle(self, argv[0], "exec-again", "3", "4", "5", "6", "7", "8", (char *)NULL,
                   environ);
        else if (!strcmp(what, "execlp-self"))
            execlp(self, argv[0], "exec-again", "3", "4", "5", "6", "7", "8", (char *)NULL);
        else if (!strcmp(what, "syscall-self"))
            syscall(SYS_execve, self, again, environ);
        else if (argc != 8 || strcmp(argv[7], "8"))
            return 4; /* the arguments did not arrive whole */
        if (strcmp(what, "exec-again"))
            return 1; /* the exec failed */
    } else if (!strcmp(what, "vfork-exec") || !strcmp(what, "vfork-fail")) {
        static void *kept[1000];
        for (int i = 0; i < 1000; i++)
            kept[i] = malloc(444);
        int exec = !strcmp(what, "vfork-exec");
        char *child[] = {argv[0], "alloc", NULL};
        pid_t pid = vfork();
        if (pid == 0) {
            for (int fd = 3; fd < 1024; fd++)
                close(fd); /* as Python's subprocess does (close_fds) */
            execv("/nonexistent/fragsim-lifecycle", child);
            if (exec)
                execv("/proc/self/exe", child);
            _exit(127);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != (exec ? 0 : 127))
            return 5; /* the child did not run as meant */
        for (int i = 0; i < 1000; i++) {
            free(kept[i]);
            free(malloc(555));
        }
    } else if (!strcmp(what, "close-all") && argc == 3) {
        static void *kept[1000];
        for (int i = 0; i < 1000; i++)
            kept[i] = malloc(444);
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd != 3)
            return 6; /* not the lowest free number */
        for (int i = 0; i < 1000; i++)
            free(kept[i]);
        for (int i = 0; i < 100000; i++)
            free(malloc(555));
        if (write(fd, "the program's own line\n", 23) != 23 || close(fd))
            return 7;
    } else if (!strcmp(what, "sigint-if-default")) {
        struct sigaction old;
        if (sigaction(SIGINT, NULL, &old) || old.sa_handler != SIG_DFL)
            return 9; /* something else's handler shows */
        if (signal(SIGINT, on_int) != SIG_DFL)
            return 10;
        void *keep = malloc(77777);
        raise(SIGINT);
        if (!got_int)
            return 11;
        free(keep);
        if (argc == 3 && !strcmp(argv[2], "die")) {
            struct sigaction dfl, now;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            if (sigaction(SIGINT, &dfl, NULL) || sigaction(SIGINT, NULL, &now) ||
                now.sa_handler != SIG_DFL)
                return 12;
            free(malloc(88888));
            raise(SIGINT);
            return 13; /* not reached: the default action ends the process */
        }
    } else if (!strcmp(what, "segv")) {
        void *keep = malloc(66666);
        fprintf(stderr, "%p\n", keep);
        raise(SIGSEGV);
    }
    return 0;
}
