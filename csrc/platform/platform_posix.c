/* platform_posix.c - platform.h over POSIX (Linux, macOS, the BSDs). */
#ifndef _WIN32

/* Before any system header: the POSIX calls below are declared even in strict C11
 * (and glibc's on_exit, a BSD extension, through _DEFAULT_SOURCE). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "platform.h"

void *vn_dl_open(const char *utf8_path, char *err, size_t cap) {
    /* RTLD_LOCAL: our symbols need not be visible to anyone; RTLD_NOW: a library
     * with a missing dependency fails here, with dlerror's reason, not mid-call. */
    void *library = dlopen(utf8_path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL && cap > 0) {
        const char *why = dlerror();
        snprintf(err, cap, "%s", why != NULL ? why : "unknown dlopen error");
    }
    return library;
}

vn_dl_fn vn_dl_sym(void *library, const char *name) {
    /* POSIX guarantees dlsym's object pointer converts to a function pointer. */
    return (vn_dl_fn)dlsym(library, name);
}

struct vn_file {
    int fd;
};

vn_file *vn_file_open(const char *utf8_path, uint64_t *size, char *err, size_t cap) {
    *size = 0;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. */
    int fd = open(utf8_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, cap, "%s", strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0) why = strerror(errno);
    else if (S_ISDIR(st.st_mode)) why = "it is a directory";
    else if (!S_ISREG(st.st_mode)) why = "it is not a regular file";
    if (why != NULL) {
        snprintf(err, cap, "%s", why);
        close(fd);
        return NULL;
    }
    vn_file *file = malloc(sizeof *file);
    if (file == NULL) {
        snprintf(err, cap, "out of memory");
        close(fd);
        return NULL;
    }
    file->fd = fd;
    *size = (uint64_t)st.st_size;
    return file;
}

size_t vn_file_read_at(vn_file *file, uint64_t offset, void *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        ssize_t got = pread(file->fd, (char *)buf + done, n - done, (off_t)(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        done += (size_t)got;
    }
    return done;
}

void vn_file_close(vn_file *file) {
    close(file->fd);
    free(file);
}

#ifdef VN_LOCK_RANK_CHECK
/* The lock-order check (platform.h, vn_lock_rank_set): a table from each ranked lock's
 * address to its rank and name, and on each thread the ranked locks it holds. A debug
 * build's: every lock and unlock looks its lock up, under the table's own lock. */
enum { RANKED_MAX = 1 << 14, HELD_MAX = 64 };
typedef struct ranked_lock {
    const void *lock; /* NULL: a free slot; TOMBSTONE: a forgotten one */
    int rank;
    const char *name;
} ranked_lock;
static ranked_lock ranked[RANKED_MAX];
static pthread_mutex_t ranked_lock_table = PTHREAD_MUTEX_INITIALIZER;
static const char TOMBSTONE_MARK;
#define TOMBSTONE ((const void *)&TOMBSTONE_MARK)
static _Thread_local ranked_lock held[HELD_MAX];
static _Thread_local int held_count;

static size_t ranked_slot(const void *lock) { return ((uintptr_t)lock >> 4) * 2654435761u % RANKED_MAX; }

/* The entry of `lock`, or NULL (unranked); called with the table locked. */
static ranked_lock *ranked_find(const void *lock) {
    for (size_t i = ranked_slot(lock), n = 0; n < RANKED_MAX; i = (i + 1) % RANKED_MAX, n++) {
        if (ranked[i].lock == lock) return &ranked[i];
        if (ranked[i].lock == NULL) return NULL;
    }
    return NULL;
}

/* A child of fork() inherits the table's lock as another thread may hold it: held
 * across the fork instead, and released on both sides. */
static void table_lock(void) { pthread_mutex_lock(&ranked_lock_table); }
static void table_unlock(void) { pthread_mutex_unlock(&ranked_lock_table); }
static pthread_once_t ranked_once = PTHREAD_ONCE_INIT;
static void ranked_init(void) { pthread_atfork(table_lock, table_unlock, table_unlock); }

void vn_lock_rank_set(const void *lock, int rank, const char *name) {
    pthread_once(&ranked_once, ranked_init);
    pthread_mutex_lock(&ranked_lock_table);
    ranked_lock *found = ranked_find(lock);
    for (size_t i = ranked_slot(lock), n = 0; found == NULL && n < RANKED_MAX; i = (i + 1) % RANKED_MAX, n++)
        if (ranked[i].lock == NULL || ranked[i].lock == TOMBSTONE) found = &ranked[i];
    if (found == NULL) {
        fprintf(stderr, "vyre_native lock-order check: more than %d ranked locks at once\n", RANKED_MAX);
        abort();
    }
    found->lock = lock;
    found->rank = rank;
    found->name = name;
    pthread_mutex_unlock(&ranked_lock_table);
}

static void rank_forget(const void *lock) {
    pthread_mutex_lock(&ranked_lock_table);
    ranked_lock *found = ranked_find(lock);
    if (found != NULL) found->lock = TOMBSTONE;
    pthread_mutex_unlock(&ranked_lock_table);
}

/* Before taking `lock`: abort if this thread holds a lock it must not be taken under. */
static void rank_take(const void *lock) {
    pthread_mutex_lock(&ranked_lock_table);
    ranked_lock *found = ranked_find(lock);
    ranked_lock entry = found != NULL ? *found : (ranked_lock){NULL, 0, NULL};
    pthread_mutex_unlock(&ranked_lock_table);
    if (entry.lock == NULL) return;
    for (int i = 0; i < held_count; i++) {
        const ranked_lock *h = &held[i];
        int objects = h->rank == 1 && entry.rank == 1; /* VN_LOCK_OBJECT: ordered by object id */
        if (entry.rank < h->rank || (entry.rank == h->rank && !(objects && h->lock != lock))) {
            fprintf(stderr, "vyre_native lock-order check: taking %s (rank %d, %p) while holding %s (rank %d, %p); "
                    "the order is layer_object.h's vn_lock_rank\n", entry.name, entry.rank, lock, h->name, h->rank,
                    h->lock);
            abort();
        }
    }
    if (held_count == HELD_MAX) {
        fprintf(stderr, "vyre_native lock-order check: more than %d locks held on one thread\n", HELD_MAX);
        abort();
    }
    held[held_count++] = entry;
}

static void rank_drop(const void *lock) {
    for (int i = held_count; i-- > 0;) {
        if (held[i].lock != lock) continue;
        memmove(&held[i], &held[i + 1], (size_t)(held_count - i - 1) * sizeof held[0]);
        held_count--;
        return;
    }
}
#else
static void rank_forget(const void *lock) { (void)lock; }
static void rank_take(const void *lock) { (void)lock; }
static void rank_drop(const void *lock) { (void)lock; }
#endif

void vn_mutex_init(vn_mutex *m) { pthread_mutex_init(m, NULL); }
void vn_mutex_destroy(vn_mutex *m) {
    rank_forget(m);
    pthread_mutex_destroy(m);
}
void vn_mutex_lock(vn_mutex *m) {
    rank_take(m);
    pthread_mutex_lock(m);
}
void vn_mutex_unlock(vn_mutex *m) {
    pthread_mutex_unlock(m);
    rank_drop(m);
}

void vn_rwlock_init(vn_rwlock *l) { pthread_rwlock_init(l, NULL); }
void vn_rwlock_destroy(vn_rwlock *l) {
    rank_forget(l);
    pthread_rwlock_destroy(l);
}
void vn_rwlock_read_lock(vn_rwlock *l) {
    rank_take(l);
    pthread_rwlock_rdlock(l);
}
void vn_rwlock_read_unlock(vn_rwlock *l) {
    pthread_rwlock_unlock(l);
    rank_drop(l);
}
void vn_rwlock_write_lock(vn_rwlock *l) {
    rank_take(l);
    pthread_rwlock_wrlock(l);
}
void vn_rwlock_write_unlock(vn_rwlock *l) {
    pthread_rwlock_unlock(l);
    rank_drop(l);
}

void vn_once_run(vn_once *once, void (*fn)(void)) { pthread_once(once, fn); }

/* Timed waits are relative: on the realtime clock (the portable default) a clock step
 * only lengthens or shortens one bounded wait, and callers loop and re-check anyway. */
void vn_cond_init(vn_cond *c) { pthread_cond_init(c, NULL); }
void vn_cond_destroy(vn_cond *c) { pthread_cond_destroy(c); }
void vn_cond_broadcast(vn_cond *c) { pthread_cond_broadcast(c); }
void vn_cond_wait_ns(vn_cond *c, vn_mutex *m, uint64_t ns) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t total = (uint64_t)ts.tv_nsec + ns % 1000000000u;
    ts.tv_sec += (time_t)(ns / 1000000000u + total / 1000000000u);
    ts.tv_nsec = (long)(total % 1000000000u);
    pthread_cond_timedwait(c, m, &ts);
}

uint64_t vn_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void vn_sleep_ns(uint64_t ns) {
    struct timespec pause = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    /* A signal cuts the sleep short: the callers poll in loops, so a short sleep is
     * harmless, and returning lets Python see a pending KeyboardInterrupt sooner. */
    nanosleep(&pause, NULL);
}

void vn_yield(void) { sched_yield(); }

typedef struct stack_run {
    void (*fn)(void *);
    void *arg;
} stack_run;

static void *run_there(void *p) {
    stack_run *run = p;
    run->fn(run->arg);
    return NULL;
}

static atomic_llong stack_threads_made;

int64_t vn_stack_threads_made(void) { return atomic_load(&stack_threads_made); }

/* A thread of `stack_bytes` (rounded up to whole pages) running start(arg), with every
 * asynchronous signal blocked there; 0, or -1 with err. */
static int start_thread(size_t stack_bytes, void *(*start)(void *), void *arg, pthread_t *thread, char *err,
                        size_t cap) {
    long page = sysconf(_SC_PAGESIZE);
    size_t unit = page > 0 ? (size_t)page : 4096u;
    if (stack_bytes < (size_t)PTHREAD_STACK_MIN) stack_bytes = (size_t)PTHREAD_STACK_MIN;
    if (stack_bytes > SIZE_MAX - unit) {
        snprintf(err, cap, "a stack of %zu bytes does not fit the address space", stack_bytes);
        return -1;
    }
    stack_bytes = (stack_bytes + unit - 1) / unit * unit; /* macOS wants whole pages */
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        rc = pthread_attr_setstacksize(&attr, stack_bytes);
        if (rc == 0) {
            /* The new thread inherits the creator's mask: all blocked there, restored here. */
            sigset_t all, old;
            sigfillset(&all);
            pthread_sigmask(SIG_SETMASK, &all, &old);
            rc = pthread_create(thread, &attr, start, arg);
            pthread_sigmask(SIG_SETMASK, &old, NULL);
        }
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        snprintf(err, cap, "%s", strerror(rc));
        return -1;
    }
    atomic_fetch_add(&stack_threads_made, 1);
    return 0;
}

int vn_run_on_new_stack(size_t stack_bytes, void (*fn)(void *), void *arg, char *err, size_t cap) {
    stack_run run = {fn, arg};
    pthread_t thread;
    if (start_thread(stack_bytes, run_there, &run, &thread, err, cap) != 0) return -1;
    pthread_join(thread, NULL);
    return 0;
}

/* The kept thread. `claim` is held by the one caller whose work it runs, for the whole
 * run (taken with trylock: a second caller never waits for the first's work); `lock`
 * guards the hand-over, in which the caller posts `job` and waits for `done`. */
static struct {
    pthread_mutex_t claim, lock;
    pthread_cond_t posted, finished;
    pid_t pid;    /* the process that made the thread: 0 before; a fork() child's differs */
    size_t stack; /* its stack */
    bool has_job, done;
    stack_run job;
} kept = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          0, 0, false, false, {NULL, NULL}};

static void *kept_loop(void *unused) {
    (void)unused;
    pthread_mutex_lock(&kept.lock);
    for (;;) {
        while (!kept.has_job) pthread_cond_wait(&kept.posted, &kept.lock);
        kept.has_job = false;
        stack_run job = kept.job;
        pthread_mutex_unlock(&kept.lock);
        job.fn(job.arg);
        pthread_mutex_lock(&kept.lock);
        kept.done = true;
        pthread_cond_signal(&kept.finished);
    }
    return NULL;
}

int vn_run_on_stack(size_t stack_bytes, size_t kept_bytes, void (*fn)(void *), void *arg, char *err, size_t cap) {
    if (stack_bytes > kept_bytes || pthread_mutex_trylock(&kept.claim) != 0)
        return vn_run_on_new_stack(stack_bytes, fn, arg, err, cap);
    pid_t self = getpid();
    if (kept.pid != 0 && (kept.pid != self || kept.stack < stack_bytes)) {
        /* a fork() child: the kept thread is its parent's (or one made smaller) */
        pthread_mutex_unlock(&kept.claim);
        return vn_run_on_new_stack(stack_bytes, fn, arg, err, cap);
    }
    if (kept.pid == 0) {
        pthread_t thread;
        if (start_thread(kept_bytes, kept_loop, NULL, &thread, err, cap) != 0) {
            pthread_mutex_unlock(&kept.claim);
            return vn_run_on_new_stack(stack_bytes, fn, arg, err, cap);
        }
        pthread_detach(thread);
        kept.pid = self;
        kept.stack = kept_bytes;
    }
    pthread_mutex_lock(&kept.lock);
    kept.job = (stack_run){fn, arg};
    kept.done = false;
    kept.has_job = true;
    pthread_cond_signal(&kept.posted);
    while (!kept.done) pthread_cond_wait(&kept.finished, &kept.lock);
    pthread_mutex_unlock(&kept.lock);
    pthread_mutex_unlock(&kept.claim);
    return 0;
}

void vn_at_fork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
    pthread_atfork(prepare, parent, child);
}

void vn_at_exit(void (*fn)(void)) { atexit(fn); }

#if defined(__GLIBC__)
static void end_now(int status, void *arg) {
    (void)arg;
    fflush(NULL);
    _exit(status);
}

void vn_exit_before_earlier_handlers(void) { on_exit(end_now, NULL); }
#else
/* No on_exit (musl, macOS): exit runs every handler. */
void vn_exit_before_earlier_handlers(void) {}
#endif

#else
/* ISO C wants a declaration in every file (MSVC's /W4 says C4206 otherwise). */
typedef int vn_platform_posix_not_built;
#endif /* !_WIN32 */
