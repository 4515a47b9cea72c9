// A known call sequence for tests/record_native.rs: every allocator call it makes between the
// two marker allocations is logged (into static buffers, no stdio until the end) and printed,
// so the test can compare the trace event for event.
//   a ADDR SIZE ALIGN   an allocation (ALIGN 0: default)
//   r OLD NEW SIZE      a realloc
//   f ADDR              a free
//   T N                 the lines that follow are worker thread N's
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <malloc.h>
#include <new>
#include <pthread.h>
#include <unistd.h>

struct Log {
    char buf[1 << 14];
    size_t len = 0;
    void line(const char *fmt, unsigned long a, unsigned long b = 0, unsigned long c = 0) {
        len += snprintf(buf + len, sizeof buf - len, fmt, a, b, c);
    }
    void a(void *p, size_t size, size_t align) { line("a %lx %lu %lu\n", (unsigned long)p, size, align); }
    void f(void *p) { line("f %lx\n", (unsigned long)p); }
    void r(void *o, void *n, size_t size) { line("r %lx %lx %lu\n", (unsigned long)o, (unsigned long)n, size); }
};

static Log main_log, worker_log[2];

// Itanium C++ ABI: new[] of a type with a non-trivial destructor stores the element count in
// an 8-byte cookie before the elements.
struct WithDtor {
    int x;
    ~WithDtor() { x = 0; }
};

struct alignas(64) Wide {
    char bytes[100];
};

static void *worker(void *arg) {
    long n = (long)arg;
    Log &log = worker_log[n];
    void *p = malloc(1000 + n);
    log.a(p, 1000 + n, 0);
    void *q = calloc(3, 100 + n);
    log.a(q, 3 * (100 + n), 0);
    void *p2 = realloc(p, 20000 + n);
    log.r(p, p2, 20000 + n);
    log.f(p2);
    free(p2);
    log.f(q);
    free(q);
    return nullptr;
}

int main() {
    // Workers first (thread creation allocates on the main thread: outside the window).
    pthread_t t[2];
    for (long i = 0; i < 2; i++) {
        pthread_create(&t[i], nullptr, worker, (void *)i);
        pthread_join(t[i], nullptr);
    }
    void *start = malloc(777001);
    Log &log = main_log;
    log.a(start, 777001, 0);

    void *c = calloc(10, 20);
    log.a(c, 200, 0);
    void *m = malloc(100);
    log.a(m, 100, 0);
    void *m2 = realloc(m, 5000);
    log.r(m, m2, 5000);
    // realloc to 0 frees the block (glibc returns NULL).
    void *z = realloc(m2, 0);
    log.f(m2);
    if (z) return 90;
    void *al = memalign(64, 300);
    log.a(al, 300, 64);
    void *pm = nullptr;
    if (posix_memalign(&pm, 128, 400) != 0) return 91;
    log.a(pm, 400, 128);
    void *aa = aligned_alloc(256, 512);
    log.a(aa, 512, 256);
    // reallocarray(NULL, ...) is an allocation.
    void *ra = reallocarray(nullptr, 7, 9);
    log.a(ra, 63, 0);

    int *ints = new int[10];  // no cookie: operator new[](40) -> malloc(40)
    log.a(ints, 40, 0);
    WithDtor *objs = new WithDtor[10];  // 8-byte cookie: malloc(48), the pointer is past it
    log.a((char *)objs - 8, 48, 0);
    // Aligned new (libstdc++ new_opa.cc): aligned_alloc(64, size rounded up to 64) = 128.
    Wide *w = new Wide;
    log.a(w, 128, 64);

    log.f(w);
    delete w;
    log.f((char *)objs - 8);
    delete[] objs;
    log.f(ints);
    delete[] ints;
    for (void *p : {c, al, pm, aa, ra}) {
        log.f(p);
        free(p);
    }
    void *end = malloc(777002);
    log.a(end, 777002, 0);
    free(start);
    free(end);

    fwrite(main_log.buf, 1, main_log.len, stdout);
    for (int i = 0; i < 2; i++) {
        printf("T %d\n", i);
        fwrite(worker_log[i].buf, 1, worker_log[i].len, stdout);
    }
    return 0;
}
