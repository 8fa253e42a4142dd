/* platform_win32.c - platform.h over Win32 (Windows 10 and later; older ones lose
 * only the fine-grained sleep). */
#ifdef _WIN32

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <stdio.h>

#include "platform.h"

/* platform.h declares these without windows.h; they must be the real layouts. */
_Static_assert(sizeof(vn_mutex) == sizeof(SRWLOCK) && _Alignof(vn_mutex) == _Alignof(SRWLOCK),
               "vn_mutex must match SRWLOCK");
_Static_assert(sizeof(vn_rwlock) == sizeof(SRWLOCK) && _Alignof(vn_rwlock) == _Alignof(SRWLOCK),
               "vn_rwlock must match SRWLOCK");
_Static_assert(sizeof(vn_once) == sizeof(INIT_ONCE) && _Alignof(vn_once) == _Alignof(INIT_ONCE),
               "vn_once must match INIT_ONCE");

/* Older SDKs (and MinGW-w64 before 11) lack the flag; Windows before 10 1803
 * rejects it, and vn_sleep_ns falls back to Sleep. */
#ifndef CREATE_WAITABLE_TIMER_HIGH_RESOLUTION
#define CREATE_WAITABLE_TIMER_HIGH_RESOLUTION 0x00000002
#endif

/* The system's text for error `code` in UTF-8, without the trailing period and line
 * break, so that it reads like dlerror's inside a longer message. */
static void describe_error(DWORD code, char *err, size_t cap) {
    wchar_t text[512];
    DWORD n = FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, code, 0, text,
                             (DWORD)(sizeof text / sizeof text[0]), NULL);
    while (n > 0 && (text[n - 1] == L'\r' || text[n - 1] == L'\n' || text[n - 1] == L'.' || text[n - 1] == L' ')) n--;
    char utf8[1024];
    int len = n == 0 ? 0 : WideCharToMultiByte(CP_UTF8, 0, text, (int)n, utf8, (int)sizeof utf8 - 1, NULL, NULL);
    utf8[len > 0 ? len : 0] = '\0';
    snprintf(err, cap, "%s (Windows error %lu)", len > 0 ? utf8 : "no description", (unsigned long)code);
}

void *vn_dl_open(const char *utf8_path, char *err, size_t cap) {
    /* The Python side passes UTF-8; the ANSI LoadLibraryA would read it in the
     * process code page and miss any path outside it. */
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8_path, -1, NULL, 0);
    if (n <= 0) {
        if (cap > 0) snprintf(err, cap, "the path is not valid UTF-8");
        return NULL;
    }
    wchar_t *wide = malloc((size_t)n * sizeof *wide);
    if (wide == NULL) {
        if (cap > 0) snprintf(err, cap, "out of memory converting the path to UTF-16");
        return NULL;
    }
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8_path, -1, wide, n);
    /* A missing dependency must come back as an error, never as a modal dialog. */
    DWORD old_mode = 0;
    SetThreadErrorMode(SEM_FAILCRITICALERRORS | SEM_NOOPENFILEERRORBOX, &old_mode);
    HMODULE library = LoadLibraryW(wide);
    DWORD code = GetLastError();
    SetThreadErrorMode(old_mode, NULL);
    free(wide);
    if (library == NULL && cap > 0) describe_error(code, err, cap);
    return (void *)library;
}

vn_dl_fn vn_dl_sym(void *library, const char *name) {
    /* FARPROC is a function pointer already; void (*)(void) takes it without a warning. */
    return (vn_dl_fn)GetProcAddress((HMODULE)library, name);
}

/* SRWLOCKs need no destruction and, unlike CRITICAL_SECTIONs, are not recursive:
 * the same contract as a default pthread mutex. */
void vn_mutex_init(vn_mutex *m) { InitializeSRWLock((PSRWLOCK)m); }
void vn_mutex_destroy(vn_mutex *m) { (void)m; }
void vn_mutex_lock(vn_mutex *m) { AcquireSRWLockExclusive((PSRWLOCK)m); }
void vn_mutex_unlock(vn_mutex *m) { ReleaseSRWLockExclusive((PSRWLOCK)m); }

void vn_rwlock_init(vn_rwlock *l) { InitializeSRWLock((PSRWLOCK)l); }
void vn_rwlock_destroy(vn_rwlock *l) { (void)l; }
void vn_rwlock_read_lock(vn_rwlock *l) { AcquireSRWLockShared((PSRWLOCK)l); }
void vn_rwlock_read_unlock(vn_rwlock *l) { ReleaseSRWLockShared((PSRWLOCK)l); }
void vn_rwlock_write_lock(vn_rwlock *l) { AcquireSRWLockExclusive((PSRWLOCK)l); }
void vn_rwlock_write_unlock(vn_rwlock *l) { ReleaseSRWLockExclusive((PSRWLOCK)l); }

/* ISO C has no conversion between function and object pointers: carry fn in a struct. */
struct once_call {
    void (*fn)(void);
};

static BOOL CALLBACK run_once(PINIT_ONCE once, PVOID param, PVOID *context) {
    (void)once;
    (void)context;
    ((struct once_call *)param)->fn();
    return TRUE;
}

void vn_once_run(vn_once *once, void (*fn)(void)) {
    struct once_call call = {fn};
    InitOnceExecuteOnce((PINIT_ONCE)once, run_once, &call, NULL);
}

uint64_t vn_monotonic_ns(void) {
    /* The frequency is fixed at boot and reading it is cheap: no cached global. */
    LARGE_INTEGER frequency, counter;
    QueryPerformanceFrequency(&frequency);
    QueryPerformanceCounter(&counter);
    uint64_t f = (uint64_t)frequency.QuadPart, c = (uint64_t)counter.QuadPart;
    /* Split so that c * 1e9 cannot overflow. */
    return c / f * 1000000000u + c % f * 1000000000u / f;
}

void vn_sleep_ns(uint64_t ns) {
    /* Sleep counts whole milliseconds on a timer that ticks every 15.6 ms by default,
     * which would stretch a 50 µs pause in a wait loop a hundredfold; a
     * high-resolution waitable timer sleeps about as long as asked. */
    HANDLE timer = CreateWaitableTimerExW(NULL, NULL, CREATE_WAITABLE_TIMER_HIGH_RESOLUTION,
                                          TIMER_MODIFY_STATE | SYNCHRONIZE);
    if (timer != NULL) {
        LARGE_INTEGER due;
        due.QuadPart = -(LONGLONG)((ns + 99) / 100); /* negative: relative, in 100 ns units */
        if (due.QuadPart == 0) due.QuadPart = -1;
        BOOL armed = SetWaitableTimer(timer, &due, 0, NULL, NULL, FALSE);
        if (armed) WaitForSingleObject(timer, INFINITE);
        CloseHandle(timer);
        if (armed) return;
    }
    uint64_t ms = (ns + 999999u) / 1000000u;
    Sleep(ms >= INFINITE ? INFINITE - 1 : (DWORD)ms);
}

void vn_yield(void) { SwitchToThread(); }

/* No fork() on Windows: a child process never inherits this one's objects. */
void vn_at_fork_child(void (*fn)(void)) { (void)fn; }
void vn_exit_before_earlier_handlers(void) {}

#else
/* ISO C wants a declaration in every file (MSVC's /W4 says C4206 otherwise). */
typedef int vn_platform_win32_not_built;
#endif /* _WIN32 */
