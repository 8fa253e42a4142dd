/* error.c - the thread-local "last error" slot behind vn_last_error(), and the one
 * formatter every message goes through (vn_format). */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_base.h"

/* One slot per thread, as SQLite keeps one per connection: a failing call on one
 * thread never overwrites the message another thread is about to read. */
static VN_THREAD_LOCAL char last_error[2048];
/* Where in WGSL the last failure points (line 0: nowhere); vn_fail resets it. */
static VN_THREAD_LOCAL uint32_t last_line, last_column;

const char *vn_last_error(void) { return last_error; }

int vn_last_error_position(uint32_t *line, uint32_t *column) {
    if (line != NULL) *line = last_line;
    if (column != NULL) *column = last_column;
    return last_line != 0;
}

void vn_set_error_position(uint32_t line, uint32_t column) {
    last_line = line;
    last_column = column;
}

void vn_clear_error(void) {
    last_error[0] = '\0';
    last_line = last_column = 0;
}

/* ---- vn_format ----------------------------------------------------------------
 *
 * A message is its format's words with values in between, and ends with its Fix. A
 * plain vsnprintf cut at the buffer's end loses exactly that end when one value is long
 * (a 3,000-byte binding name, a long WGPU_LIB_PATH). vn_format keeps every byte of the
 * format's own text and every value's start and end: when the whole does not fit, the
 * longest %s values are each shortened to "<start>...<end>", all to one common length,
 * just enough to fit. Numbers are never shortened. */

enum { MAX_PIECES = 96, SCRATCH = 1536 };

typedef struct {
    const char *text;
    size_t len;
    bool value; /* a %s value: may be shortened */
} piece;

static bool utf8_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

/* How `s` (len bytes) fits in at most `room` bytes: whole (*head = len, *from = len), or
 * its first *head bytes, "...", and its bytes from *from, cut at UTF-8 character
 * boundaries (*dots: the "..." is there). Returns the length that takes. */
static size_t shorten(const char *s, size_t len, size_t room, size_t *head, size_t *from, bool *dots) {
    *dots = false;
    if (len <= room) {
        *head = *from = len;
        return len;
    }
    if (room < 3) {
        *head = 0;
        *from = len;
        return 0;
    }
    *dots = true;
    size_t keep = room - 3, h = (keep + 1) / 2, f = len - (keep - h);
    while (h > 0 && utf8_continuation((unsigned char)s[h])) h--;
    while (f < len && utf8_continuation((unsigned char)s[f])) f++;
    *head = h;
    *from = f;
    return h + 3 + (len - f);
}

/* The output, with the middle [skip_from, skip_to) of its positions left out (as "..."). */
typedef struct {
    char *buf;
    size_t room, out, at, skip_from, skip_to;
} writer;

static void emit(writer *w, const char *text, size_t len) {
    for (size_t k = 0; k < len; k++, w->at++) {
        if (w->at >= w->skip_from && w->at < w->skip_to) {
            if (w->at == w->skip_from && w->out + 3 <= w->room) {
                memcpy(w->buf + w->out, "...", 3);
                w->out += 3;
            }
            continue;
        }
        if (w->out < w->room) w->buf[w->out++] = text[k];
    }
}

/* One conversion (spec..end, e.g. "%08llx") with its argument, into scratch. */
static size_t format_one(char *out, size_t room, const char *spec, size_t spec_len, va_list *args) {
    char one[32];
    if (spec_len >= sizeof one) return 0;
    memcpy(one, spec, spec_len);
    one[spec_len] = '\0';
    /* '*' widths and precisions are ints taken first; at most two. */
    int stars[2] = {0, 0}, n_stars = 0;
    for (size_t i = 0; i < spec_len; i++)
        if (one[i] == '*' && n_stars < 2) stars[n_stars++] = va_arg(*args, int);
    char conv = one[spec_len - 1];
    const char *len_mod = one + 1;
    while (*len_mod != '\0' && strchr("-+ #0123456789.*", *len_mod) != NULL) len_mod++;
    int n = 0;
#define VN_FORMAT_ARG(type)                                                                              \
    do {                                                                                                 \
        type v = va_arg(*args, type);                                                                    \
        n = n_stars == 2 ? snprintf(out, room, one, stars[0], stars[1], v)                               \
            : n_stars == 1 ? snprintf(out, room, one, stars[0], v)                                       \
                           : snprintf(out, room, one, v);                                                \
    } while (0)
    bool is_long = len_mod[0] == 'l' && len_mod[1] != 'l', is_llong = len_mod[0] == 'l' && len_mod[1] == 'l';
    switch (conv) {
    case 'd': case 'i':
        if (is_llong) VN_FORMAT_ARG(long long);
        else if (is_long) VN_FORMAT_ARG(long);
        else if (len_mod[0] == 'z') VN_FORMAT_ARG(ptrdiff_t); /* %zd: the signed size_t */
        else if (len_mod[0] == 'j') VN_FORMAT_ARG(intmax_t);
        else if (len_mod[0] == 't') VN_FORMAT_ARG(ptrdiff_t);
        else VN_FORMAT_ARG(int); /* hh and h are promoted to int */
        break;
    case 'u': case 'x': case 'X': case 'o':
        if (is_llong) VN_FORMAT_ARG(unsigned long long);
        else if (is_long) VN_FORMAT_ARG(unsigned long);
        else if (len_mod[0] == 'z') VN_FORMAT_ARG(size_t);
        else if (len_mod[0] == 'j') VN_FORMAT_ARG(uintmax_t);
        else if (len_mod[0] == 't') VN_FORMAT_ARG(size_t);
        else VN_FORMAT_ARG(unsigned int);
        break;
    case 'c': VN_FORMAT_ARG(int); break;
    case 'p': VN_FORMAT_ARG(void *); break;
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
        if (len_mod[0] == 'L') VN_FORMAT_ARG(long double);
        else VN_FORMAT_ARG(double);
        break;
    default: return 0; /* %n and unknown conversions: the printf attribute refuses them */
    }
#undef VN_FORMAT_ARG
    if (n < 0) return 0;
    return (size_t)n < room ? (size_t)n : room > 0 ? room - 1 : 0;
}

size_t vn_vformat(char *buf, size_t cap, const char *fmt, va_list args) {
    if (cap == 0) return 0;
    piece pieces[MAX_PIECES];
    char scratch[SCRATCH];
    size_t count = 0, used = 0, total = 0, values = 0;
    va_list ap;
    va_copy(ap, args);
    const char *p = fmt;
    while (*p != '\0' && count < MAX_PIECES) {
        if (*p != '%' || p[1] == '%') {
            const char *start = p;
            if (*p == '%') p += 2; /* "%%": one '%', the first of the pair */
            else
                while (*p != '\0' && *p != '%') p++;
            pieces[count++] = (piece){start, *start == '%' ? 1 : (size_t)(p - start), false};
            continue;
        }
        const char *spec = p++;
        while (*p != '\0' && strchr("-+ #0123456789.*hlzjtL", *p) != NULL) p++;
        if (*p == '\0') break;
        char conv = *p++;
        if (conv == 's') {
            /* precision: "%.64s" or "%.*s" (an int argument); width is not used with %s here */
            const char *dot = memchr(spec, '.', (size_t)(p - spec));
            size_t limit = SIZE_MAX;
            if (dot != NULL) {
                int precision = dot[1] == '*' ? va_arg(ap, int) : (int)strtol(dot + 1, NULL, 10);
                limit = precision < 0 ? SIZE_MAX : (size_t)precision;
            }
            const char *s = va_arg(ap, const char *);
            if (s == NULL) s = "(null)";
            size_t len = 0;
            while (len < limit && s[len] != '\0') len++;
            pieces[count++] = (piece){s, len, true};
            values++;
        } else {
            size_t n = format_one(scratch + used, sizeof scratch - used, spec, (size_t)(p - spec), &ap);
            pieces[count++] = (piece){scratch + used, n, false};
            used += n;
        }
    }
    va_end(ap);
    for (size_t i = 0; i < count; i++) total += pieces[i].len;

    /* Each value at most `limit` bytes; the largest limit that fits (binary search). */
    size_t room = cap - 1, limit = SIZE_MAX;
    if (total > room && values > 0) {
        size_t fixed = 0, longest = 0;
        for (size_t i = 0; i < count; i++) {
            if (!pieces[i].value) fixed += pieces[i].len;
            else if (pieces[i].len > longest) longest = pieces[i].len;
        }
        size_t lo = 0, hi = longest;
        while (lo < hi) {
            size_t mid = lo + (hi - lo + 1) / 2, sum = fixed;
            for (size_t i = 0; i < count; i++)
                if (pieces[i].value) sum += pieces[i].len < mid ? pieces[i].len : mid;
            if (sum <= room) lo = mid;
            else hi = mid - 1;
        }
        limit = lo;
    }
    /* Write the pieces; if the format's own text alone is too long (it never is for
     * this layer's messages), its middle goes too: its start and the Fix at its end stay. */
    size_t head, from, length = 0;
    bool dots;
    for (size_t i = 0; i < count; i++)
        length += pieces[i].value ? shorten(pieces[i].text, pieces[i].len, limit, &head, &from, &dots) : pieces[i].len;
    writer w = {buf, room, 0, 0, SIZE_MAX, 0};
    if (length > room && room >= 3) {
        size_t keep = room - 3;
        w.skip_from = keep / 2;
        w.skip_to = length - (keep - keep / 2);
    }
    for (size_t i = 0; i < count; i++) {
        if (!pieces[i].value) {
            emit(&w, pieces[i].text, pieces[i].len);
            continue;
        }
        shorten(pieces[i].text, pieces[i].len, limit, &head, &from, &dots);
        emit(&w, pieces[i].text, head);
        if (dots) emit(&w, "...", 3);
        emit(&w, pieces[i].text + from, pieces[i].len - from);
    }
    buf[w.out] = '\0';
    return w.out;
}

size_t vn_format(char *buf, size_t cap, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    size_t n = vn_vformat(buf, cap, fmt, args);
    va_end(args);
    return n;
}

const char *vn_sum_text(uint64_t a, uint64_t b, char buf[VN_SUM_TEXT]) {
    uint64_t sum = a + b;
    if (sum >= a) {
        snprintf(buf, VN_SUM_TEXT, "%llu", (unsigned long long)sum);
        return buf;
    }
    /* Past 2^64: the wrapped sum plus 2^64 = 1844674407 * 10^10 + 3709551616, by halves. */
    const uint64_t ten10 = 10000000000ULL;
    uint64_t low = sum % ten10 + 3709551616ULL, high = sum / ten10 + 1844674407ULL + low / ten10;
    snprintf(buf, VN_SUM_TEXT, "%llu%010llu", (unsigned long long)high, (unsigned long long)(low % ten10));
    return buf;
}

vn_status vn_fail(vn_status code, const char *fmt, ...) {
    va_list args;
    last_line = last_column = 0;
    va_start(args, fmt);
    vn_vformat(last_error, sizeof last_error, fmt, args);
    va_end(args);
    return code;
}

vn_status vn_fail_prefixed(vn_status code, const char *prefix) {
    char kept[sizeof last_error];
    memcpy(kept, last_error, sizeof kept);
    vn_format(last_error, sizeof last_error, "%s%s", prefix, kept);
    return code;
}

/* The bytes `copy_lines` writes for `len` bytes of `data` with each line cut to `bound`
 * bytes (and "..."), its NUL included. */
static size_t lines_size(const char *data, size_t len, size_t bound) {
    size_t total = 1;
    for (size_t start = 0; start <= len;) {
        const char *nl = memchr(data + start, '\n', len - start);
        size_t n = (nl != NULL ? (size_t)(nl - data) : len) - start;
        total += (n > bound ? bound + 3 : n) + (nl != NULL);
        if (nl == NULL) break;
        start += n + 1;
    }
    return total;
}

/* Too long a message into buf: each line longer than a common bound loses its middle
 * ("<start>...<end>", cut at UTF-8 characters), the bound the largest that lets it fit,
 * so short lines are kept whole: naga's position ("┌─ wgsl:3:16") survives a message
 * that quotes a long literal or name (a cut of the message's middle took it). A message
 * of too many lines for that loses its middle instead. */
static void copy_lines(char *buf, size_t cap, const char *data, size_t len) {
    enum { SHORTEST = 16 };
    if (lines_size(data, len, SHORTEST) > cap) {
        vn_format(buf, cap, "%.*s", len > INT_MAX ? INT_MAX : (int)len, data);
        return;
    }
    size_t lo = SHORTEST, hi = len; /* lines_size(lo) fits, lines_size(hi) does not */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (lines_size(data, len, mid) <= cap) lo = mid;
        else hi = mid;
    }
    size_t used = 0;
    for (size_t start = 0; start <= len;) {
        const char *nl = memchr(data + start, '\n', len - start);
        size_t n = (nl != NULL ? (size_t)(nl - data) : len) - start;
        const char *line = data + start;
        if (n <= lo) {
            memcpy(buf + used, line, n);
            used += n;
        } else {
            size_t head = lo / 2, from = n - (lo - head);
            while (head > 0 && (line[head] & 0xC0) == 0x80) head--;
            while (from < n && (line[from] & 0xC0) == 0x80) from++;
            memcpy(buf + used, line, head);
            memcpy(buf + used + head, "...", 3);
            memcpy(buf + used + head + 3, line + from, n - from);
            used += head + 3 + n - from;
        }
        if (nl == NULL) break;
        buf[used++] = '\n';
        start += n + 1;
    }
    buf[used] = '\0';
}

void vn_string_view_copy(WGPUStringView view, char *buf, size_t cap) {
    if (cap == 0) return;
    size_t len = 0;
    const char *data = view.data;
    if (data != NULL) len = view.length == WGPU_STRLEN ? strlen(data) : view.length;
    /* A NUL inside (naga quotes the source line, and a WGSL comment may hold one) as
     * U+2400, one character as the NUL is, so that nothing after it is cut off. */
    char *spelled = NULL;
    if (len > 0 && len < SIZE_MAX / 3 && memchr(data, '\0', len) != NULL && (spelled = malloc(3 * len)) != NULL) {
        size_t k = 0;
        for (size_t i = 0; i < len; i++) {
            if (data[i] != '\0') {
                spelled[k++] = data[i];
            } else {
                memcpy(spelled + k, "\xe2\x90\x80", 3);
                k += 3;
            }
        }
        data = spelled;
        len = k;
    }
    if (len < cap) {
        if (len > 0) memcpy(buf, data, len);
        buf[len] = '\0';
    } else {
        copy_lines(buf, cap, data, len);
    }
    free(spelled);
}

vn_status vn_fail_no_memory(const char *what, size_t bytes) {
    return vn_fail(VN_ERROR_OUT_OF_MEMORY, "could not allocate %s (%zu bytes). Fix: free host memory.", what, bytes);
}

vn_status vn_null_out(const char *fn, const char *what) {
    return vn_fail(VN_ERROR_INVALID_ARGUMENT, "%s: %s is NULL. Fix: pass a result pointer.", fn, what);
}
