/* platform.h - the operating-system services the C layer uses, behind one small API:
 * loading a shared library, reading a file, locks, run-once, thread-local storage, a monotonic clock,
 * sleeping and yielding, a function run on a thread of a given stack size, and a hook run in the
 * child after fork(). platform_posix.c implements it over POSIX, platform_win32.c
 * over Win32; each compiles to nothing on the other platform. No other file includes
 * a system threading or loader header (pthread.h is here only for its types on POSIX).
 *
 * Compilers: GCC or Clang on POSIX; on Windows MinGW-w64 GCC or clang-cl, or MSVC from
 * Visual Studio 2022 17.9 (the function table in layer_base.h needs __typeof__, which
 * MSVC accepts in every C mode from 17.9) with /std:c11 /experimental:c11atomics
 * (stdatomic.h, from 17.5). */
#ifndef VN_PLATFORM_H
#define VN_PLATFORM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <pthread.h>
#endif

/* ---- compiler ----------------------------------------------------------------- */

/* C11 spells thread-local storage _Thread_local; MSVC has its own spelling. */
#if defined(_MSC_VER) && !defined(__clang__)
#define VN_THREAD_LOCAL __declspec(thread)
#else
#define VN_THREAD_LOCAL _Thread_local
#endif

/* printf-style argument checking. MinGW's stdio.h names the archetype that matches
 * the printf the build links (ms_printf, or gnu_printf with UCRT or
 * __USE_MINGW_ANSI_STDIO, which the build sets so that %zu works on msvcrt). */
#if defined(__MINGW32__)
#include <stdio.h>
#define VN_PRINTF_LIKE(fmt, first) __attribute__((format(__MINGW_PRINTF_FORMAT, fmt, first)))
#elif defined(__GNUC__) || defined(__clang__)
#define VN_PRINTF_LIKE(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define VN_PRINTF_LIKE(fmt, first)
#endif

/* A static function inlined wherever it is called, so that a constant argument (the
 * pass walk's `encode`, encode.c) specialises each caller's copy of it. */
#if defined(__GNUC__) || defined(__clang__)
#define VN_ALWAYS_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define VN_ALWAYS_INLINE __forceinline
#else
#define VN_ALWAYS_INLINE inline
#endif

/* ---- dynamic loading ---------------------------------------------------------- */

/* Any function pointer type converts to and from this one without a warning. */
typedef void (*vn_dl_fn)(void);

/* Load the library at `utf8_path` with every symbol resolved now; NULL on failure,
 * with the system's reason in err (always terminated). */
void *vn_dl_open(const char *utf8_path, char *err, size_t cap);
/* The exported function `name` of a library from vn_dl_open, or NULL. */
vn_dl_fn vn_dl_sym(void *library, const char *name);

/* ---- files ------------------------------------------------------------------------ */

/* A file opened for reading by vn_file_open. */
typedef struct vn_file vn_file;

/* Open `utf8_path` for reading when it is a regular file (a FIFO, a device or a
 * directory is refused without waiting on it), with its size in *size; NULL on
 * failure, with the reason in err (always terminated). */
vn_file *vn_file_open(const char *utf8_path, uint64_t *size, char *err, size_t cap);
/* Read up to n bytes at `offset` into buf; the count read (fewer at the end of the
 * file or on an error). */
size_t vn_file_read_at(vn_file *file, uint64_t offset, void *buf, size_t n);
void vn_file_close(vn_file *file);

/* ---- locks and run-once -------------------------------------------------------- */

/* Plain (non-recursive) mutex and a reader-writer lock. Init before first use,
 * destroy after last; never copied once initialised. */
#ifdef _WIN32
/* The size and layout of SRWLOCK and INIT_ONCE (one pointer each, zero when fresh),
 * so that callers need not include windows.h; platform_win32.c asserts the match. */
typedef struct { void *opaque; } vn_mutex;
typedef struct { void *opaque; } vn_rwlock;
typedef struct { void *opaque; } vn_once;
typedef struct { void *opaque; } vn_cond; /* CONDITION_VARIABLE */
#define VN_ONCE_INIT {0}
#else
typedef pthread_mutex_t vn_mutex;
typedef pthread_rwlock_t vn_rwlock;
typedef pthread_once_t vn_once;
typedef pthread_cond_t vn_cond;
#define VN_ONCE_INIT PTHREAD_ONCE_INIT
#endif

void vn_mutex_init(vn_mutex *m);
void vn_mutex_destroy(vn_mutex *m);
void vn_mutex_lock(vn_mutex *m);
void vn_mutex_unlock(vn_mutex *m);

void vn_rwlock_init(vn_rwlock *l);
void vn_rwlock_destroy(vn_rwlock *l);
void vn_rwlock_read_lock(vn_rwlock *l);
void vn_rwlock_read_unlock(vn_rwlock *l);
void vn_rwlock_write_lock(vn_rwlock *l);
void vn_rwlock_write_unlock(vn_rwlock *l);

/* The lock-order check (layer_object.h, "lock order", ranks the locks): with
 * VN_LOCK_RANK_CHECK defined, `lock` (a vn_mutex or vn_rwlock, initialised) gets `rank`
 * and `name` for the messages, and every lock and unlock on this thread is checked
 * against the ranks it holds; destroying the lock forgets it. Without, nothing. */
#ifdef VN_LOCK_RANK_CHECK
void vn_lock_rank_set(const void *lock, int rank, const char *name);
#else
static inline void vn_lock_rank_set(const void *lock, int rank, const char *name) {
    (void)lock;
    (void)rank;
    (void)name;
}
#endif

/* A condition variable used with a vn_mutex. vn_cond_wait_ns waits at most about `ns`
 * nanoseconds (spurious wake-ups happen: callers re-check their condition). */
void vn_cond_init(vn_cond *c);
void vn_cond_destroy(vn_cond *c);
void vn_cond_wait_ns(vn_cond *c, vn_mutex *m, uint64_t ns);
void vn_cond_broadcast(vn_cond *c);

/* Run fn exactly once per `once`, however many threads call; every caller returns
 * after fn has finished. */
void vn_once_run(vn_once *once, void (*fn)(void));

/* ---- time and scheduling ------------------------------------------------------- */

/* Nanoseconds of a clock that never steps back (not wall time). */
uint64_t vn_monotonic_ns(void);
/* Sleep at least about `ns` nanoseconds (the system's timer may round up). */
void vn_sleep_ns(uint64_t ns);
/* Offer the rest of this thread's time slice to another ready thread. */
void vn_yield(void);

static inline double vn_monotonic_seconds(void) { return (double)vn_monotonic_ns() * 1e-9; }

/* ---- threads -------------------------------------------------------------------- */

/* Run fn(arg) on a new thread whose stack reserves at least `stack_bytes`, with every
 * asynchronous signal blocked there (they go to the caller's threads, as before), and
 * wait for it to return. A reservation is address space: only the pages the thread
 * touches are ever committed. 0 when fn ran; otherwise no thread was made (the system
 * refused a stack that large, or threads) and err has the system's reason (always
 * terminated). */
int vn_run_on_new_stack(size_t stack_bytes, void (*fn)(void *), void *arg, char *err, size_t cap);
/* As vn_run_on_new_stack, but on the process's kept thread when it is free and its stack
 * holds stack_bytes: that thread is made by the first such call with a stack of
 * kept_bytes (at least stack_bytes), and then waits for the next call instead of ending.
 * A new thread costs more than the work it runs when that work is short (a compile of a
 * WGSL the driver has cached: about 100 us a thread on lavapipe). A call whose stack
 * does not fit, or that finds the kept thread busy (another thread's call), or that
 * runs in a fork() child (the thread stayed in the parent), gets a new thread. Windows:
 * always a new thread. */
int vn_run_on_stack(size_t stack_bytes, size_t kept_bytes, void (*fn)(void *), void *arg, char *err, size_t cap);
/* Threads vn_run_on_new_stack and vn_run_on_stack have made in this process (the kept one
 * included): for the tests of the kept thread. */
int64_t vn_stack_threads_made(void);

/* ---- processes ------------------------------------------------------------------ */

/* Around every fork() (pthread_atfork): prepare in the parent before it, parent in the
 * parent after it, child in the child before fork() returns there. Windows has no fork:
 * nothing to register. */
void vn_at_fork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
/* Run fn when the process exits (atexit), before the handlers registered earlier. */
void vn_at_exit(void (*fn)(void));
/* From now on, exit() ends the process (with its status, stdio flushed) right after the
 * exit handlers registered later than this call: those registered earlier never run.
 * For a fork() child, where the earlier ones are GPU drivers' teardown of the parent's
 * devices (Mesa's lavapipe crashes there, NVIDIA's waits). glibc (on_exit); elsewhere
 * nothing. */
void vn_exit_before_earlier_handlers(void);

/* ---- strings -------------------------------------------------------------------- */

/* strdup is POSIX (and C23), not C11, and MSVC names it _strdup: one portable copy. */
static inline char *vn_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy != NULL) memcpy(copy, s, n);
    return copy;
}

#endif /* VN_PLATFORM_H */
