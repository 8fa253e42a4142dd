/* diagnostics.c - WGSL compile errors as "<what>\n<source line>\n<caret>\nFix: ...".
 *
 * wgpu-native 29 has no compilation info (wgpuShaderModuleGetCompilationInfo panics:
 * "not implemented", an abort across the FFI), so the position comes from naga's own
 * message, which shows it as codespan does ("┌─ wgsl:3:16", or "┌─ :3:16" for a
 * validation error) with the source line and a caret line under it. naga counts lines
 * by LF alone; the place is said here as WGSL counts it (every WGSL line break ends a
 * line: vn_wgsl_place, as reflection and the nesting check say it), the column in
 * characters, and the source line shown is taken from the WGSL the caller passed. Where the message has no span, the place it names is
 * looked up in the source (find_subject); where there is none, the message says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

/* Bytes of a source line shown whole; a longer one is shown as a window of this many
 * around the column, marked "..." at each cut end. 600: the line and its caret line
 * (spaces up to the column) then fit the 2,048-byte message with its headline and Fix. */
enum { SHOWN_LINE_MAX = 600 };
#define NUL_SHOWN "\xe2\x90\x80" /* U+2400 SYMBOL FOR NULL, in UTF-8 */

vn_status vn_immediates_unsupported(const vn_device *device, const char *what, const char *shown) {
    bool offered = wgpu.AdapterHasFeature(device->adapter, (WGPUFeatureName)WGPUNativeFeature_Immediates);
    return vn_fail(VN_ERROR_UNSUPPORTED,
                   "%s, but this device lacks wgpu-native's \"immediates\" feature (adapter '%s' %s)%s%s\nFix: %s",
                   what, device->info.name,
                   offered ? "offers it; the device was created without it" : "does not offer it",
                   shown != NULL ? "\n" : ".", shown != NULL ? shown : "",
                   offered ? "create the device with the feature: vn.Device() requests it wherever the adapter offers "
                             "it, and a wgpu-py device needs required_features=[\"immediates\"] in "
                             "adapter.request_device_sync() before Device.from_wgpu()."
                           : "pass the values in a uniform buffer (params=) instead of var<immediate>, or run on an "
                             "adapter that offers immediates (Vulkan, Metal and DX12 ones do).");
}

/* The text after `key` up to the end of its line, into out (trimmed). */
static void rest_of_line(const char *from, char *out, size_t cap) {
    while (*from == ' ') from++;
    size_t n = strcspn(from, "\n");
    while (n > 0 && (from[n - 1] == ' ' || from[n - 1] == '\r')) n--;
    if (n >= cap) n = cap - 1;
    memcpy(out, from, n);
    out[n] = '\0';
}

static bool utf8_continuation(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

/* The byte that naga's "line:column" names. naga (codespan) counts lines by LF alone, so
 * a module whose lines end in CR, NEL, U+2028 and WGSL's other breaks is one line to it;
 * its column is in characters. False where the source has no such line. */
static bool naga_offset(const char *src, size_t len, unsigned line, unsigned column, size_t *at) {
    const char *p = src, *end = src + len;
    for (unsigned l = 1; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) return false;
        p = nl + 1;
    }
    for (unsigned c = 1; c < column && p < end && *p != '\n'; c++) {
        p++;
        while (p < end && utf8_continuation(*p)) p++;
    }
    *at = (size_t)(p - src);
    return true;
}

/* The place of the n bytes at byte `at`, as WGSL counts lines (vn_wgsl_place): line and
 * column (characters), the length in characters, and the bytes of its line. */
static void place_of(const char *src, size_t len, size_t at, size_t n, unsigned *line, unsigned *column,
                     uint32_t *run, const char **src_line, size_t *src_n) {
    unsigned long long l, c;
    size_t start;
    vn_wgsl_place(src, len, at, &l, &c, &start, src_n);
    *line = l > UINT32_MAX ? UINT32_MAX : (unsigned)l;
    *column = c > UINT32_MAX ? UINT32_MAX : (unsigned)c;
    *src_line = src + start;
    *run = 0;
    for (size_t i = 0; i < n && at + i < len; i++)
        if (!utf8_continuation(src[at + i])) ++*run;
}

/* naga's caret line after the position marker: the length of the run of '^' that
 * starts at `column` (1 when none is found) and, when that run is the line's only one,
 * the label after it ("expected expression"). */
static uint32_t caret_run(const char *marker, uint32_t column, char *label, size_t cap) {
    label[0] = '\0';
    const char *bar = "\xe2\x94\x82"; /* U+2502, the gutter of naga's excerpt */
    for (const char *line = marker; (line = strchr(line, '\n')) != NULL;) {
        line++;
        const char *end = line + strcspn(line, "\n");
        const char *gutter = strstr(line, bar);
        if (gutter == NULL || gutter > end) continue;
        const char *text = gutter + strlen(bar);
        if (*text == ' ') text++;
        const char *caret = memchr(text, '^', (size_t)(end - text));
        if (caret == NULL) continue;
        /* The gutter is followed by the source's characters one for one (tabs as tabs). */
        uint32_t col = 1;
        for (const char *q = text; q < caret; q++)
            if (!utf8_continuation(*q)) col++;
        if (col != column) return 1;
        uint32_t run = 0;
        while (caret + run < end && caret[run] == '^') run++;
        const char *after = caret + run;
        /* naga's own IR names ("naga::ir::GlobalVariable [0]") say nothing to a WGSL author */
        if (memchr(after, '^', (size_t)(end - after)) == NULL && strstr(after, "naga::") != after + 1) {
            size_t n = (size_t)(end - after);
            while (n > 0 && *after == ' ') after++, n--;
            if (n >= cap) n = cap - 1;
            memcpy(label, after, n);
            label[n] = '\0';
        }
        return run;
    }
    return 1;
}

/* "<source line>\n<caret line>" into out: the line (a window around the column when it
 * is long), then spaces (tabs kept) up to the column and `run` carets. */
static void excerpt(const char *text, size_t n, uint32_t column, uint32_t run, const char *label, char *out,
                    size_t cap) {
    /* byte offset of the column: column - 1 characters in */
    size_t at = 0;
    for (uint32_t c = 1; c < column && at < n; c++) {
        at++;
        while (at < n && utf8_continuation(text[at])) at++;
    }
    size_t from = 0, to = n;
    if (n > SHOWN_LINE_MAX) {
        from = at > SHOWN_LINE_MAX / 2 ? at - SHOWN_LINE_MAX / 2 : 0;
        while (from > 0 && utf8_continuation(text[from])) from--;
        to = from + SHOWN_LINE_MAX < n ? from + SHOWN_LINE_MAX : n;
        while (to < n && utf8_continuation(text[to])) to++;
    }
    /* The line byte for byte, but a NUL (legal in a comment) shown as U+2400 (one
     * character, as the NUL is: the caret's column holds), which C strings cannot cut. */
    size_t used = (size_t)snprintf(out, cap, "%s", from > 0 ? "..." : "");
    for (size_t i = from; i < to && used + 4 < cap; i++) {
        if (text[i] == '\0') {
            memcpy(out + used, NUL_SHOWN, 3);
            used += 3;
        } else {
            out[used++] = text[i];
        }
    }
    if (used < cap) used += (size_t)snprintf(out + used, cap - used, "%s\n%s", to < n ? "..." : "", from > 0 ? "   " : "");
    if (used >= cap) used = cap - 1;
    for (size_t i = from; i < at && used + 1 < cap; i++) {
        if (utf8_continuation(text[i])) continue;
        out[used++] = text[i] == '\t' ? '\t' : ' ';
    }
    for (uint32_t i = 0; i < run && used + 1 < cap; i++) out[used++] = '^';
    out[used < cap ? used : cap - 1] = '\0';
    if (label[0] != '\0' && used < cap) snprintf(out + used, cap - used, " %s", label);
}

/* ---- places naga's message names without a span ----------------------------------
 *
 * A few of naga's errors carry no span in wgpu-native 29's message, though they name
 * something the source declares: an entry point ("Entry point main at Compute is
 * invalid": its arguments, results or workgroup size) and a resource binding ("Shader
 * global ResourceBinding { group: 9, binding: 0 } ..."). A scan of the source's tokens
 * (comments skipped, as WGSL's block comments nest) finds the declaration. */

static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           ((unsigned char)c & 0x80);
}

/* The next token at or after *p: its start (NULL at the end) and length; comments and
 * blanks skipped. Punctuation is one byte. */
static const char *next_token(const char **p, const char *end, size_t *n) {
    const char *q = *p;
    for (;;) {
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')) q++;
        if (q + 1 < end && q[0] == '/' && q[1] == '/') {
            while (q < end && *q != '\n') q++;
        } else if (q + 1 < end && q[0] == '/' && q[1] == '*') {
            int depth = 0;
            do {
                if (q + 1 < end && q[0] == '/' && q[1] == '*') depth++, q += 2;
                else if (q + 1 < end && q[0] == '*' && q[1] == '/') depth--, q += 2;
                else q++;
            } while (depth > 0 && q < end);
        } else {
            break;
        }
    }
    if (q >= end) {
        *p = end;
        return NULL;
    }
    const char *t = q;
    if (ident_char(*q)) {
        while (q < end && ident_char(*q)) q++;
    } else {
        q++;
    }
    *n = (size_t)(q - t);
    *p = q;
    return t;
}

static bool token_is(const char *t, size_t n, const char *word) { return t != NULL && strlen(word) == n && memcmp(t, word, n) == 0; }

/* An integer literal token's value (0x..., a u/i suffix), or -1. */
static long literal(const char *t, size_t n) {
    char buf[32];
    if (t == NULL || n == 0 || n >= sizeof buf || !(t[0] >= '0' && t[0] <= '9')) return -1;
    memcpy(buf, t, n);
    buf[n] = '\0';
    char *rest = NULL;
    long v = strtol(buf, &rest, 0);
    return (*rest == '\0' || *rest == 'u' || *rest == 'i') ? v : -1;
}

/* `<keyword> <name>` (`fn main`, `override n`): the name's byte offset and length. */
static bool find_decl(const char *src, size_t len, const char *keyword, const char *name, size_t name_n, size_t *at,
                      size_t *n) {
    const char *p = src, *end = src + len, *t;
    size_t k;
    bool after = false;
    while ((t = next_token(&p, end, &k)) != NULL) {
        if (after && k == name_n && memcmp(t, name, k) == 0) {
            *at = (size_t)(t - src);
            *n = k;
            return true;
        }
        after = token_is(t, k, keyword);
    }
    return false;
}

/* The declaration with @group(group) @binding(binding): its `@group` attribute's byte
 * offset and length. */
static bool find_binding(const char *src, size_t len, long group, long binding, size_t *at, size_t *n) {
    const char *p = src, *end = src + len, *t;
    size_t k;
    long g = -1, b = -1;
    const char *g_at = NULL, *g_end = NULL;
    while ((t = next_token(&p, end, &k)) != NULL) {
        if (token_is(t, k, "@")) {
            const char *q = p, *name, *open, *value, *close;
            size_t nn, no, nv, nc;
            name = next_token(&q, end, &nn);
            open = next_token(&q, end, &no);
            value = next_token(&q, end, &nv);
            close = next_token(&q, end, &nc);
            if (!token_is(open, no, "(") || !token_is(close, nc, ")")) continue;
            if (token_is(name, nn, "group")) {
                g = literal(value, nv);
                g_at = t;
                g_end = close + 1;
            } else if (token_is(name, nn, "binding")) {
                b = literal(value, nv);
            }
            p = q;
        } else if (token_is(t, k, "var")) {
            if ((group < 0 ? g >= 0 : g == group) && b == binding && g_at != NULL) {
                *at = (size_t)(g_at - src);
                *n = (size_t)(g_end - g_at);
                return true;
            }
            g = b = -1;
            g_at = NULL;
        } else if (token_is(t, k, ";") || token_is(t, k, "{") || token_is(t, k, "}")) {
            g = b = -1;
            g_at = NULL;
        }
    }
    return false;
}

/* The `@<attribute>` among the attributes of `fn <entry>` (its byte offset and length:
 * the `@` through the name), or, with attribute NULL or absent there, the entry's name. */
static bool find_entry_attribute(const char *src, size_t len, const char *entry, const char *attribute, size_t *at,
                                 size_t *n) {
    const char *p = src, *end = src + len, *t, *attr = NULL;
    size_t k, entry_n = strlen(entry);
    bool after_fn = false;
    while ((t = next_token(&p, end, &k)) != NULL) {
        if (after_fn && k == entry_n && memcmp(t, entry, k) == 0) {
            if (attr != NULL) {
                *at = (size_t)(attr - src);
                *n = 1 + strlen(attribute);
            } else {
                *at = (size_t)(t - src);
                *n = k;
            }
            return true;
        }
        after_fn = token_is(t, k, "fn");
        if (token_is(t, k, "@") && attribute != NULL) {
            const char *q = p;
            size_t nn;
            const char *name = next_token(&q, end, &nn);
            if (token_is(name, nn, attribute)) attr = t;
        } else if (after_fn || token_is(t, k, ";") || token_is(t, k, "}")) {
            if (!after_fn) attr = NULL;
        }
        if (token_is(t, k, "{")) attr = NULL;
    }
    return false;
}

/* The first `var<<space>>` (its `var` through the `>`). */
static bool find_var_of_space(const char *src, size_t len, const char *space, size_t *at, size_t *n) {
    const char *p = src, *end = src + len, *t;
    size_t k;
    while ((t = next_token(&p, end, &k)) != NULL) {
        if (!token_is(t, k, "var")) continue;
        const char *q = p, *open, *name, *close;
        size_t no, nn, nc;
        open = next_token(&q, end, &no);
        name = next_token(&q, end, &nn);
        close = next_token(&q, end, &nc);
        if (token_is(open, no, "<") && token_is(name, nn, space) && token_is(close, nc, ">")) {
            *at = (size_t)(t - src);
            *n = (size_t)(close + 1 - t);
            return true;
        }
    }
    return false;
}

vn_status vn_shader_point(const char *wgsl, size_t wgsl_len, const char *entry, const char *attribute,
                          const char *space, vn_status code) {
    if (wgsl == NULL || entry == NULL) return code;
    size_t at = 0, n = 0;
    bool found = space != NULL ? find_var_of_space(wgsl, wgsl_len, space, &at, &n)
                               : find_entry_attribute(wgsl, wgsl_len, entry, attribute, &at, &n);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", vn_last_error());
    char *fix = NULL;
    for (char *f = strstr(msg, ". Fix: "); f != NULL; f = strstr(f + 1, ". Fix: ")) fix = f;
    if (!found || fix == NULL) return code;
    *fix = '\0';
    unsigned line, column;
    uint32_t run;
    const char *src_line = NULL;
    size_t src_n = 0;
    place_of(wgsl, wgsl_len, at, n, &line, &column, &run, &src_line, &src_n);
    char shown[4 * SHOWN_LINE_MAX + 300]; /* a NUL shown takes 3 bytes */
    excerpt(src_line, src_n, column, run, "", shown, sizeof shown);
    vn_status st = vn_fail(code, "%s at line %u, column %u (wgsl:%u:%u)\n%s\nFix: %s", msg, line, column, line, column,
                           shown, fix + strlen(". Fix: "));
    vn_set_error_position(line, column);
    return st;
}

/* Where a span-less message's subject is declared: its byte offset and length, or false. */
static bool find_subject(const char *msg, const char *src, size_t len, size_t *at, size_t *n) {
    bool found = false;
    const char *ep = strstr(msg, "Entry point ");
    const char *rb = strstr(msg, "ResourceBinding { group: ");
    const char *ov = strstr(msg, "constant with identifier string: '");
    const char *bi = strstr(msg, "Binding index ");
    long group = -1, binding = -1;
    if (ov != NULL) {
        const char *name = ov + strlen("constant with identifier string: '");
        size_t name_n = strcspn(name, "'\n");
        found = name_n > 0 && find_decl(src, len, "override", name, name_n, at, n);
    } else if (ep != NULL) {
        const char *name = ep + strlen("Entry point ");
        size_t name_n = strcspn(name, " \n");
        found = name_n > 0 && find_decl(src, len, "fn", name, name_n, at, n);
    } else if (rb != NULL && sscanf(rb, "ResourceBinding { group: %ld, binding: %ld }", &group, &binding) == 2) {
        found = find_binding(src, len, group, binding, at, n);
    } else if (bi != NULL && sscanf(bi, "Binding index %ld", &binding) == 1) {
        found = find_binding(src, len, -1, binding, at, n); /* wgpu names no group: the first of that number */
    }
    return found;
}

/* The feature a naga capability stands for, NULL when it is none of the adapter's. */
static const char *capability_feature(const char *msg) {
    static const struct { const char *capability, *feature; } known[] = {
        {"SUBGROUP_BARRIER", "subgroup-barrier"}, {"SUBGROUP", "subgroup"}, {"SHADER_FLOAT16", "shader-f16"},
        {"FLOAT64", "shader-f64"}, {"SHADER_INT64", "shader-int64"},
    };
    const char *caps = strstr(msg, "Capabilities(");
    if (caps == NULL) return NULL;
    const char *end = strchr(caps, ')');
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const char *hit = strstr(caps, known[i].capability);
        if (hit != NULL && (end == NULL || hit < end)) return known[i].feature;
    }
    return NULL;
}

vn_status vn_shader_diagnose(vn_device *device, const char *wgsl, size_t wgsl_len, vn_status code) {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", vn_last_error());
    /* vn_scope_end's ". Fix: ..." ends the message: cut it off, the Fix is rewritten. */
    char *fix = NULL;
    for (char *f = strstr(msg, ". Fix: "); f != NULL; f = strstr(f + 1, ". Fix: ")) fix = f;
    char generic_fix[300] = "";
    if (fix != NULL) {
        snprintf(generic_fix, sizeof generic_fix, "%s", fix + 2);
        *fix = '\0';
    }
    const char *marker = strstr(msg, "\xe2\x94\x8c\xe2\x94\x80"); /* "┌─", naga's position marker */
    unsigned line = 0, column = 0, naga_column = 0;
    size_t at = 0, n = 0;
    bool found = false;
    if (marker != NULL) {
        /* "<label>:<line>:<column>" (the label may be empty): the last ':' pair on the line */
        const char *end = marker + strcspn(marker, "\n");
        for (const char *p = marker; p < end && line == 0; p++) {
            if (*p != ':' || sscanf(p, ":%u:%u", &line, &column) != 2) line = column = 0;
        }
        naga_column = column;
        found = line != 0 && column != 0 && wgsl != NULL && naga_offset(wgsl, wgsl_len, line, column, &at);
    }
    /* No span in the message: the place it names, found in the source (scanned). */
    uint32_t run = 1;
    bool scanned = false;
    if (marker == NULL && code == VN_ERROR_SHADER && wgsl != NULL)
        found = scanned = find_subject(msg, wgsl, wgsl_len, &at, &n);
    /* A binding number past wgpu's limit: the pipeline's generic Fix does not fit it. */
    long index = 0, most = 0;
    const char *past = strstr(msg, "Binding index ");
    if (past != NULL && sscanf(past, "Binding index %ld is greater than the maximum number %ld", &index, &most) == 2)
        snprintf(generic_fix, sizeof generic_fix, "Fix: number the binding %ld or lower (wgpu's limit).", most);
    const char *src_line = NULL;
    size_t src_n = 0;
    if (found) {
        uint32_t subject_run;
        place_of(wgsl, wgsl_len, at, n, &line, &column, &subject_run, &src_line, &src_n);
        if (scanned) run = subject_run;
    } else {
        /* No position at all: the message as wgpu gave it, said plainly to have none. */
        /* "<doing> failed: In wgpuDevice..., label = '...'\n    <what>": the doing and the what */
        char plain[1600];
        vn_format(plain, sizeof plain, "%s", msg);
        const char *in = strstr(msg, "In wgpu");
        const char *nl = in != NULL ? strchr(in, '\n') : NULL;
        if (nl != NULL) {
            while (*nl == ' ' || *nl == '\n') nl++;
            vn_format(plain, sizeof plain, "%.*s%s", (int)(in - msg), msg, nl);
        }
        size_t k = strlen(plain);
        while (k > 0 && (plain[k - 1] == '.' || plain[k - 1] == '\n' || plain[k - 1] == ' ')) plain[--k] = '\0';
        return vn_fail(code, "WGSL error with no position (wgpu-native's message names no line or column, and none "
                       "could be found for it in the source): %s.\n%s", plain,
                       generic_fix[0] ? generic_fix : "Fix: correct the WGSL as the message says.");
    }

    /* naga's headline: "Shader '<label>' parsing error: <what>" or "Shader validation
     * error: <what>", kept from "parsing error" / "validation error" on; a headline of
     * another form ("Shader global ... exceeds ...") whole. */
    const char *stop = marker != NULL ? marker : msg + strlen(msg);
    char headline[512] = "error";
    const char *shader = strstr(msg, "Shader ");
    if (shader != NULL && shader < stop) {
        const char *kind = strstr(shader, " error: ");
        const char *start = shader + strlen("Shader ");
        if (*start == '\'') {
            const char *close = strchr(start + 1, '\'');
            if (close != NULL) start = close + 1;
        }
        if (kind != NULL && kind < stop) {
            while (*start == ' ') start++;
            rest_of_line(start, headline, sizeof headline);
        } else if (scanned) {
            memcpy(headline, "error: ", 8);
            rest_of_line(start, headline + 7, sizeof headline - 7);
        }
    } else if (scanned) {
        /* "<doing> failed: In wgpuDeviceCreateComputePipeline, label = 'main'\n    <what>":
         * "error: <what> (<doing>: In ..., label = 'main')", the object named as wgpu names it */
        const char *in = strstr(msg, "In wgpu");
        const char *nl = in != NULL ? strchr(in, '\n') : NULL;
        if (nl != NULL) {
            char rest[400], where[160];
            rest_of_line(nl + 1, rest, sizeof rest);
            size_t k = strlen(rest);
            while (k > 0 && rest[k - 1] == '.') rest[--k] = '\0';
            rest_of_line(in, where, sizeof where);
            size_t doing = (size_t)(in - msg);
            while (doing > 0 && (msg[doing - 1] == ' ' || msg[doing - 1] == ':')) doing--;
            if (doing >= 7 && memcmp(msg + doing - 7, " failed", 7) == 0) doing -= 7;
            vn_format(headline, sizeof headline, "error: %s (%.*s: %s)", rest, (int)doing, msg, where);
        }
    }
    size_t trim = strlen(headline);
    while (trim > 0 && headline[trim - 1] == '.') headline[--trim] = '\0';
    /* naga's notes ("  = ..."): the first under a span; every one where none came. */
    char note[256] = "";
    for (const char *eq = strstr(marker != NULL ? marker : msg, "\n "); eq != NULL; eq = strstr(eq + 1, "\n ")) {
        const char *text = eq + 1;
        while (*text == ' ') text++;
        if (text[0] != '=' || text[1] != ' ') continue;
        size_t used = strlen(note);
        if (used > 0 && used + 2 < sizeof note) memcpy(note + used, "; ", 3), used += 2;
        rest_of_line(text + 2, note + used, sizeof note - used);
        if (marker != NULL) break;
    }
    char label[200] = "";
    if (marker != NULL) run = caret_run(marker, naga_column, label, sizeof label); /* naga's excerpt: its column */
    char shown[4 * SHOWN_LINE_MAX + 300]; /* a NUL shown takes 3 bytes */
    excerpt(src_line, src_n, column, run, label, shown, sizeof shown);

    char what[900];
    vn_format(what, sizeof what, "WGSL %s%s%s%s at line %u, column %u (wgsl:%u:%u%s)", headline, note[0] ? " (" : "",
              note, note[0] ? ")" : "", line, column, line, column,
              scanned ? "; wgpu-native's message has no span, so this is where the source declares what it names" : "");
    vn_status st;
    const char *feature = capability_feature(msg);
    bool lacks_immediates =
        strstr(msg, "IMMEDIATES") != NULL &&
        !wgpu.DeviceHasFeature(device->device, (WGPUFeatureName)WGPUNativeFeature_Immediates);
    if (lacks_immediates) {
        char declares[200];
        snprintf(declares, sizeof declares, "the WGSL declares var<immediate> data at line %u, column %u", line, column);
        st = vn_immediates_unsupported(device, declares, shown);
    } else if (feature != NULL) {
        st = vn_fail(code, "%s\n%s\nFix: this needs the \"%s\" feature, which this device lacks (dev.features lists "
                     "what it has); run on an adapter that offers it (vn.Device() requests it wherever offered), or "
                     "rewrite line %u without it.", what, shown, feature, line);
    } else {
        st = vn_fail(code, "%s\n%s\nFix: correct the WGSL at line %u, column %u.", what, shown, line, column);
    }
    vn_set_error_position(line, column);
    return st;
}
