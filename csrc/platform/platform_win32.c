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

/* A UTF-8 path as the UTF-16 the W functions take (free it); NULL with the reason in err.
 * The Python side passes UTF-8; the ANSI functions would read it in the process code
 * page and miss any path outside it. */
static wchar_t *widen(const char *utf8_path, char *err, size_t cap) {
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
    return wide;
}

void *vn_dl_open(const char *utf8_path, char *err, size_t cap) {
    wchar_t *wide = widen(utf8_path, err, cap);
    if (wide == NULL) return NULL;
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

struct vn_file {
    HANDLE handle;
};

vn_file *vn_file_open(const char *utf8_path, uint64_t *size, char *err, size_t cap) {
    *size = 0;
    wchar_t *wide = widen(utf8_path, err, cap);
    if (wide == NULL) return NULL;
    /* Without FILE_FLAG_BACKUP_SEMANTICS a directory does not open at all. */
    HANDLE handle = CreateFileW(wide, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                                OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    DWORD code = GetLastError();
    free(wide);
    if (handle == INVALID_HANDLE_VALUE) {
        describe_error(code, err, cap);
        return NULL;
    }
    LARGE_INTEGER length;
    vn_file *file = NULL;
    if (GetFileType(handle) != FILE_TYPE_DISK) snprintf(err, cap, "it is not a regular file");
    else if (!GetFileSizeEx(handle, &length)) describe_error(GetLastError(), err, cap);
    else if ((file = malloc(sizeof *file)) == NULL) snprintf(err, cap, "out of memory");
    if (file == NULL) {
        CloseHandle(handle);
        return NULL;
    }
    file->handle = handle;
    *size = (uint64_t)length.QuadPart;
    return file;
}

size_t vn_file_read_at(vn_file *file, uint64_t offset, void *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        /* A synchronous handle reads at the OVERLAPPED's offset, and waits for it. */
        OVERLAPPED at;
        memset(&at, 0, sizeof at);
        uint64_t pos = offset + done;
        at.Offset = (DWORD)pos;
        at.OffsetHigh = (DWORD)(pos >> 32);
        DWORD want = n - done > 0x40000000u ? 0x40000000u : (DWORD)(n - done), got = 0;
        if (!ReadFile(file->handle, (char *)buf + done, want, &got, &at) || got == 0) break;
        done += got;
    }
    return done;
}

void vn_file_close(vn_file *file) {
    CloseHandle(file->handle);
    free(file);
}

/* SRWLOCKs need no destruction and, unlike CRITICAL_SECTIONs, are not recursive:
 * the same contract as a default pthread mutex. */
_Static_assert(sizeof(vn_cond) == sizeof(CONDITION_VARIABLE) && _Alignof(vn_cond) == _Alignof(CONDITION_VARIABLE),
               "vn_cond must match CONDITION_VARIABLE");
void vn_cond_init(vn_cond *c) { InitializeConditionVariable((PCONDITION_VARIABLE)c); }
void vn_cond_destroy(vn_cond *c) { (void)c; /* nothing to free */ }
void vn_cond_broadcast(vn_cond *c) { WakeAllConditionVariable((PCONDITION_VARIABLE)c); }
void vn_cond_wait_ns(vn_cond *c, vn_mutex *m, uint64_t ns) {
    uint64_t ms = (ns + 999999u) / 1000000u;
    SleepConditionVariableSRW((PCONDITION_VARIABLE)c, (PSRWLOCK)m, ms > 0xFFFFFFFEu ? 0xFFFFFFFEu : (DWORD)ms, 0);
}

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
typedef struct stack_run {
    void (*fn)(void *);
    void *arg;
} stack_run;

static DWORD WINAPI run_there(LPVOID p) {
    stack_run *run = p;
    run->fn(run->arg);
    return 0;
}

static volatile LONG64 stack_threads_made;

int vn_run_on_new_stack(size_t stack_bytes, void (*fn)(void *), void *arg, char *err, size_t cap) {
    /* A reservation, not a commit (the flag): the pages are committed as the stack grows.
     * Windows has no asynchronous signals to block; Ctrl-C runs on a thread of its own. */
    stack_run run = {fn, arg};
    HANDLE thread = CreateThread(NULL, stack_bytes, run_there, &run, STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (thread == NULL) {
        describe_error(GetLastError(), err, cap);
        return -1;
    }
    InterlockedIncrement64(&stack_threads_made);
    WaitForSingleObject(thread, INFINITE);
    CloseHandle(thread);
    return 0;
}

int vn_run_on_stack(size_t stack_bytes, size_t kept_bytes, void (*fn)(void *), void *arg, char *err, size_t cap) {
    (void)kept_bytes; /* no kept thread here yet: a new one each time */
    return vn_run_on_new_stack(stack_bytes, fn, arg, err, cap);
}

int64_t vn_stack_threads_made(void) { return stack_threads_made; }

void vn_at_fork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
    (void)prepare, (void)parent, (void)child;
}
void vn_at_exit(void (*fn)(void)) { atexit(fn); }
void vn_exit_before_earlier_handlers(void) {}

#else
/* ISO C wants a declaration in every file (MSVC's /W4 says C4206 otherwise). */
typedef int vn_platform_win32_not_built;
#endif /* _WIN32 */
