/* A small thread pool: the main thread submits jobs (a malloc'd header and payload) to a
 * queue; 3 workers take them, allocate a result, free the job (memory the main thread
 * allocated: a cross-thread free) and hand the result back; the main thread frees the
 * results, then stops and joins the workers (thread exits). Every 50th payload is 40 KiB
 * (a large size class). Usage: thread_pool [JOBS] (default 1500). Built with
 * `gcc -O2 -pthread`; recorded into data/traces/c-thread-pool.trace. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 3

struct job {
    struct job *next;
    unsigned id;
    size_t len;
    unsigned char *payload;
};

struct result {
    struct result *next;
    unsigned id;
    unsigned sum;
    char *label;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static struct job *head, *tail;
static struct result *results;
static int stopping;

static void *worker(void *arg) {
    unsigned me = (unsigned)(size_t)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!head && !stopping)
            pthread_cond_wait(&ready, &lock);
        struct job *j = head;
        if (j) {
            head = j->next;
            if (!head)
                tail = NULL;
        }
        pthread_mutex_unlock(&lock);
        if (!j)
            return NULL;
        struct result *r = malloc(sizeof *r);
        r->id = j->id;
        r->sum = me;
        for (size_t k = 0; k < j->len; k++)
            r->sum += j->payload[k];
        r->label = malloc(16 + j->id % 48);
        snprintf(r->label, 16, "job %u", j->id);
        free(j->payload);
        free(j);
        pthread_mutex_lock(&lock);
        r->next = results;
        results = r;
        pthread_mutex_unlock(&lock);
    }
}

int main(int argc, char **argv) {
    unsigned jobs = argc > 1 ? (unsigned)atoi(argv[1]) : 1500;
    pthread_t t[WORKERS];
    for (size_t i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    unsigned long total = 0;
    for (unsigned i = 0; i < jobs; i++) {
        struct job *j = malloc(sizeof *j);
        j->id = i;
        j->len = i % 50 == 49 ? 40 << 10 : 24 + (i * 37) % 4000;
        j->payload = malloc(j->len);
        memset(j->payload, (int)(i & 0xff), j->len);
        j->next = NULL;
        pthread_mutex_lock(&lock);
        if (tail)
            tail->next = j;
        else
            head = j;
        tail = j;
        pthread_cond_signal(&ready);
        /* Collect what is done so far (the results' memory came from the workers). */
        struct result *done = results;
        results = NULL;
        pthread_mutex_unlock(&lock);
        while (done) {
            struct result *next = done->next;
            total += done->sum;
            free(done->label);
            free(done);
            done = next;
        }
    }
    pthread_mutex_lock(&lock);
    stopping = 1;
    pthread_cond_broadcast(&ready);
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    for (struct result *r = results, *next; r; r = next) {
        next = r->next;
        total += r->sum;
        free(r->label);
        free(r);
    }
    printf("%lu\n", total);
    return 0;
}
