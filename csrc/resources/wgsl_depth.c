/* wgsl_depth.c - refusing WGSL nested deeper than wgpu-native's compiler survives, or
 * longer than vyre_native compiles, and the stack a compile of a source gets.
 *
 * Nesting is bounded here; chains of declarations (each naming the next) are not: naga's
 * dependency walk recurses once per link whatever the kind, so their stack grows with
 * the source, and vn_shader_create gives the compile a stack of vn_wgsl_compile_stack
 * bytes for it (the figures are in vn_pipeline.h, beside VN_WGSL_STACK_BYTES_PER_BYTE).
 *
 * naga (wgpu-native's WGSL compiler) recurses once per nesting level and, deep enough,
 * overflows its stack: SIGSEGV, the process gone, no error to catch. So every shader
 * is walked here first (vn_shader_create) and refused with VN_ERROR_SHADER past
 * VN_WGSL_MAX_NESTING_DEPTH levels (the header says how the levels are counted).
 *
 * Two passes over the text, each linear in its length and neither recursive: WGSL's
 * template-list discovery (so `a < b` is a comparison and `array<u32, 4>` a level), then
 * the cost walk. Tokens are read as far as the walk needs them: comments (`//` to a
 * line break, nested block comments) and blankspace skipped, names (any non-ASCII
 * character outside blankspace taken as a name's, as in every module WGSL allows:
 * its only non-ASCII tokens are identifiers), numbers (with exponents: the `-` of
 * `1e-5` or `0x1p-3` is no operator), and single-character punctuation. Memory: one
 * bit a byte of text for the template brackets, only once one is found, and stacks as
 * deep as the brackets open (the walk's bounded by max_depth, discovery's by the `<`s
 * pending), each grown by doubling with its size checked. */
#include <stdlib.h>
#include <string.h>

#include "layer_resources.h"

enum { TOK_END, TOK_NAME, TOK_NUMBER, TOK_PUNCT };

typedef struct token {
    size_t start, end; /* byte offsets: [start, end) */
    int kind;
    unsigned char ch;  /* a TOK_PUNCT's character */
} token;

typedef struct text {
    const unsigned char *s;
    size_t n;
} text;

/* The byte length of the WGSL line break at p (CR LF is one), 0 where none is. */
static size_t line_break_at(const text *t, size_t p) {
    unsigned char c = t->s[p];
    if (c == '\r') return (p + 1 < t->n && t->s[p + 1] == '\n') ? 2 : 1;
    if (c == '\n' || c == '\v' || c == '\f') return 1;
    if (c == 0xC2 && p + 1 < t->n && t->s[p + 1] == 0x85) return 2; /* NEL */
    if (c == 0xE2 && p + 2 < t->n && t->s[p + 1] == 0x80 && (t->s[p + 2] == 0xA8 || t->s[p + 2] == 0xA9))
        return 3; /* LINE and PARAGRAPH SEPARATOR */
    return 0;
}

/* The byte length of the blankspace character at p, 0 where none is: space, tab, a
 * line break, LRM or RLM. */
static size_t blank_at(const text *t, size_t p) {
    unsigned char c = t->s[p];
    if (c == ' ' || c == '\t') return 1;
    if (c == 0xE2 && p + 2 < t->n && t->s[p + 1] == 0x80 && (t->s[p + 2] == 0x8E || t->s[p + 2] == 0x8F))
        return 3;
    return line_break_at(t, p);
}

static int starts(const text *t, size_t p, char a, char b) {
    return p + 1 < t->n && t->s[p] == (unsigned char)a && t->s[p + 1] == (unsigned char)b;
}

/* p past blankspace and comments; an unclosed block comment runs to the end (the
 * compiler reports it). */
static size_t skip_blank(const text *t, size_t p) {
    while (p < t->n) {
        size_t b = blank_at(t, p);
        if (b != 0) {
            p += b;
        } else if (starts(t, p, '/', '/')) {
            p += 2;
            while (p < t->n && line_break_at(t, p) == 0) p++;
        } else if (starts(t, p, '/', '*')) {
            size_t depth = 1; /* block comments nest in WGSL */
            p += 2;
            while (p < t->n && depth != 0) {
                if (starts(t, p, '/', '*')) {
                    depth++;
                    p += 2;
                } else if (starts(t, p, '*', '/')) {
                    depth--;
                    p += 2;
                } else {
                    p++;
                }
            }
        } else {
            break;
        }
    }
    return p;
}

static int is_digit(const text *t, size_t p) { return p < t->n && t->s[p] >= '0' && t->s[p] <= '9'; }

static int is_hex(const text *t, size_t p) {
    if (p >= t->n) return 0;
    unsigned char c = t->s[p];
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

static size_t digits_from(const text *t, size_t p) {
    while (is_digit(t, p)) p++;
    return p;
}

static size_t hex_from(const text *t, size_t p) {
    while (is_hex(t, p)) p++;
    return p;
}

static int byte_is(const text *t, size_t p, const char *set) {
    return p < t->n && t->s[p] != 0 && strchr(set, t->s[p]) != NULL;
}

/* The end of an exponent ([eE] or [pP], given as `marks`, then [+-]? and digits) at p,
 * 0 where there is none. */
static size_t exponent_end(const text *t, size_t p, const char *marks) {
    if (!byte_is(t, p, marks)) return 0;
    p++;
    if (byte_is(t, p, "+-")) p++;
    if (!is_digit(t, p)) return 0;
    return digits_from(t, p);
}

/* The end of the number at p (a digit, or `.` before a digit), 0 where none starts:
 * WGSL's literal forms, the first that matches, in this order: a hex float with an
 * exponent, a hex float, a hex integer, a decimal float (its exponent optional), a
 * decimal with an exponent, a decimal integer. */
static size_t number_end(const text *t, size_t p) {
    if (starts(t, p, '0', 'x') || starts(t, p, '0', 'X')) {
        size_t q = hex_from(t, p + 2), e;
        if (q < t->n && t->s[q] == '.') {
            size_t m = hex_from(t, q + 1);
            if ((e = exponent_end(t, m, "pP")) != 0) return byte_is(t, e, "fh") ? e + 1 : e;
            return m;
        }
        if (q > p + 2) {
            if ((e = exponent_end(t, q, "pP")) != 0) return byte_is(t, e, "fh") ? e + 1 : e;
            return byte_is(t, q, "iu") ? q + 1 : q;
        }
    }
    size_t d = digits_from(t, p), m = 0, e;
    if (d > p && d < t->n && t->s[d] == '.')
        m = digits_from(t, d + 1);
    else if (d == p && p < t->n && t->s[p] == '.' && is_digit(t, p + 1))
        m = digits_from(t, p + 1);
    if (m != 0) {
        if ((e = exponent_end(t, m, "eE")) != 0) m = e;
        return byte_is(t, m, "fh") ? m + 1 : m;
    }
    if (d == p) return 0;
    if ((e = exponent_end(t, d, "eE")) != 0) return byte_is(t, e, "fh") ? e + 1 : e;
    return byte_is(t, d, "fhiu") ? d + 1 : d;
}

static int name_byte(const text *t, size_t p, int first) {
    unsigned char c = t->s[p];
    if (c >= 0x80) return blank_at(t, p) == 0;
    return c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (!first && c >= '0' && c <= '9');
}

/* The token at or after byte p. */
static token token_from(const text *t, size_t p) {
    token tok = {0, 0, TOK_END, 0};
    p = skip_blank(t, p);
    tok.start = tok.end = p;
    if (p >= t->n) return tok;
    size_t end;
    if (name_byte(t, p, 1)) {
        end = p + 1;
        while (end < t->n && name_byte(t, end, 0)) end++;
        tok.kind = TOK_NAME;
    } else if ((end = number_end(t, p)) != 0) {
        tok.kind = TOK_NUMBER;
    } else {
        end = p + 1;
        tok.kind = TOK_PUNCT;
        tok.ch = t->s[p];
    }
    tok.end = end;
    return tok;
}

static int is_punct(token tok, char c) { return tok.kind == TOK_PUNCT && tok.ch == (unsigned char)c; }

/* `b` is character c right after `a`, nothing between: `<=`, not `< =`. */
static int joined(token a, token b, char c) { return is_punct(b, c) && b.start == a.end; }

static int is_word(const text *t, token tok, const char *word) {
    size_t len = strlen(word);
    return tok.kind == TOK_NAME && tok.end - tok.start == len && memcmp(t->s + tok.start, word, len) == 0;
}

static int punct_in(token tok, const char *set) { return tok.kind == TOK_PUNCT && tok.ch != 0 && strchr(set, tok.ch) != NULL; }

/* Make room for one more entry in a stack of `*cap` entries of `size` bytes. */
static int grow(void **items, size_t *cap, size_t used, size_t size) {
    if (used < *cap) return 1;
    size_t want = *cap == 0 ? 64 : *cap;
    if (want > SIZE_MAX / 2 / size) return 0;
    void *bigger = realloc(*items, 2 * want * size);
    if (bigger == NULL) return 0;
    *items = bigger;
    *cap = 2 * want;
    return 1;
}

static vn_status out_of_memory(size_t len) {
    return vn_fail(VN_ERROR_OUT_OF_MEMORY, "checking the nesting of %zu bytes of WGSL ran out of host memory. Fix: "
                   "free host memory.", len);
}

typedef struct pending_lt {
    size_t at;    /* offset of a `<` after a name */
    size_t depth; /* bracket depth there */
} pending_lt;

/* WGSL's template-list discovery (spec: "Template Lists"): each `<` after a name is a
 * candidate, closed by the first `>` at its bracket depth; `<<`, `<=`, `>=`, `==`, `!=`,
 * `->`, `&&` and `||` are operators, and `=`, `;`, `{` and `:` end every candidate.
 * Sets the bit of each template list's `<` and `>` in *marks (allocated at the first). */
static vn_status find_templates(const text *t, unsigned char **marks) {
    pending_lt *pending = NULL;
    size_t cap = 0, used = 0, depth = 0;
    vn_status st = VN_OK;
    token cur = token_from(t, 0);
    while (cur.kind != TOK_END) {
        token next = token_from(t, cur.end), after = next;
        int step = 1;
        if (cur.kind == TOK_NAME) {
            if (is_punct(next, '<')) {
                after = token_from(t, next.end);
                if (joined(next, after, '<') || joined(next, after, '=')) {
                    step = 3;
                } else {
                    if (!grow((void **)&pending, &cap, used, sizeof *pending)) {
                        st = out_of_memory(t->n);
                        break;
                    }
                    pending[used++] = (pending_lt){next.start, depth};
                    step = 2;
                }
            }
        } else if (cur.kind != TOK_PUNCT) {
            /* a number */
        } else if (cur.ch == '>') {
            if (used != 0 && pending[used - 1].depth == depth) {
                if (*marks == NULL && (*marks = calloc(t->n / 8 + 1, 1)) == NULL) {
                    st = out_of_memory(t->n);
                    break;
                }
                size_t lt = pending[--used].at;
                (*marks)[lt / 8] |= (unsigned char)(1u << (lt % 8));
                (*marks)[cur.start / 8] |= (unsigned char)(1u << (cur.start % 8));
            } else if (joined(cur, next, '=')) {
                step = 2;
            }
        } else if (cur.ch == '(' || cur.ch == '[') {
            depth++;
        } else if (cur.ch == ')' || cur.ch == ']') {
            while (used != 0 && pending[used - 1].depth >= depth) used--;
            if (depth != 0) depth--;
        } else if ((cur.ch == '!' || cur.ch == '=') && joined(cur, next, '=')) {
            step = 2;
        } else if (punct_in(cur, "=;{:")) { /* an assignment, a statement's end or a block */
            depth = 0;
            used = 0;
        } else if ((cur.ch == '&' || cur.ch == '|') && joined(cur, next, (char)cur.ch)) {
            while (used != 0 && pending[used - 1].depth >= depth) used--;
            step = 2;
        } else if (cur.ch == '-' && joined(cur, next, '>')) {
            step = 2;
        }
        cur = step == 1 ? next : step == 2 ? token_from(t, next.end) : token_from(t, after.end);
    }
    free(pending);
    return st;
}

static int marked(const unsigned char *marks, size_t at) {
    return marks != NULL && (marks[at / 8] >> (at % 8)) & 1u;
}

void vn_wgsl_place(const char *src, size_t n, size_t at, unsigned long long *line, unsigned long long *column,
                   size_t *line_start, size_t *line_len) {
    const text t = {(const unsigned char *)src, n};
    unsigned long long l = 1, c = 1;
    size_t p = 0, start = 0;
    if (at > n) at = n;
    while (p < at) {
        size_t b = line_break_at(&t, p);
        if (b != 0) {
            l++;
            c = 1;
            p += b;
            start = p;
        } else {
            if ((t.s[p] & 0xC0) != 0x80) c++; /* UTF-8: a character starts at each non-continuation byte */
            p++;
        }
    }
    *line = l;
    *column = c;
    if (line_start != NULL) *line_start = start;
    if (line_len != NULL) {
        size_t e = start;
        while (e < n && line_break_at(&t, e) == 0) e++;
        *line_len = e - start;
    }
}

typedef struct level {
    uint64_t ops;    /* operators in its current expression */
    uint64_t chains; /* `else if`s of the if-chain it is in */
} level;

static vn_status too_deep(const text *t, token at, uint32_t max_depth, const level *levels, size_t top, uint64_t cost) {
    uint64_t else_ifs = 0;
    for (size_t i = 0; i <= top; i++) else_ifs += levels[i].chains;
    const uint64_t unit = VN_WGSL_OPERATORS_PER_LEVEL, else_if = unit / VN_WGSL_ELSE_IFS_PER_LEVEL;
    unsigned long long line, column;
    vn_wgsl_place((const char *)t->s, t->n, at.start, &line, &column, NULL, NULL);
    vn_status st = vn_fail(VN_ERROR_SHADER,
                           "line %llu, column %llu: the WGSL nests deeper than %u levels here (%zu open brackets, %llu "
                           "operators and %llu `else if`s around it; each bracket or template list is a level, and so is "
                           "every %d chained operators or %d `else if`s of one chain). vyre_native refuses it before "
                           "wgpu-native's compiler, which recurses per level and crashes the process on deep nesting. "
                           "Fix: split the expression into several `let`s, the if-chain into a switch or several ifs, or "
                           "nest less.",
                           line, column, max_depth, top, (unsigned long long)(cost - top * unit - else_ifs * else_if),
                           (unsigned long long)else_ifs, VN_WGSL_OPERATORS_PER_LEVEL, VN_WGSL_ELSE_IFS_PER_LEVEL);
    vn_set_error_position(line > UINT32_MAX ? UINT32_MAX : (uint32_t)line,
                          column > UINT32_MAX ? UINT32_MAX : (uint32_t)column);
    return st;
}

/* The cost walk: one level for each enclosing bracket (`(`, `[`, `{`, a template list),
 * one for every VN_WGSL_OPERATORS_PER_LEVEL operators of the enclosing expressions
 * (naga nests an operator chain one level per operator; `[` is an operator too) and one
 * for every VN_WGSL_ELSE_IFS_PER_LEVEL `else if`s of an enclosing if-chain. Costs are
 * counted in operators (a level is VN_WGSL_OPERATORS_PER_LEVEL of them). An
 * over-estimate: a compound operator counts per character. */
static vn_status walk(const text *t, const unsigned char *marks, uint32_t max_depth) {
    const uint64_t unit = VN_WGSL_OPERATORS_PER_LEVEL, else_if = unit / VN_WGSL_ELSE_IFS_PER_LEVEL;
    const uint64_t limit = ((uint64_t)max_depth + 1) * unit;
    level *levels = NULL;
    size_t cap = 0, top = 0; /* levels[0..top]: the module's, then one per open bracket */
    if (!grow((void **)&levels, &cap, 0, sizeof *levels)) return out_of_memory(t->n);
    levels[0] = (level){0, 0};
    uint64_t cost = 0; /* unit per open bracket, every level's ops, else_if per chained `else if` */
    vn_status st = VN_OK;
    token cur = token_from(t, 0);
    while (cur.kind != TOK_END) {
        token next = token_from(t, cur.end);
        level *here = &levels[top];
        if (cur.kind != TOK_PUNCT) {
            if (!(is_word(t, cur, "else") && is_word(t, next, "if"))) {
                cur = next;
                continue;
            }
            here->chains++;
            cost += else_if;
        } else {
            unsigned char c = cur.ch;
            if (punct_in(cur, ",;{")) { /* an expression ends */
                cost -= here->ops;
                here->ops = 0;
            }
            if (punct_in(cur, "([{") || (c == '<' && marked(marks, cur.start))) {
                if (c == '[') { /* an index is an operator too */
                    here->ops++;
                    cost++;
                }
                if (!grow((void **)&levels, &cap, top + 1, sizeof *levels)) {
                    st = out_of_memory(t->n);
                    break;
                }
                levels[++top] = (level){0, 0};
                cost += unit;
            } else if (punct_in(cur, ")]}") || (c == '>' && marked(marks, cur.start))) {
                if (top > 0) {
                    cost -= levels[top].ops + levels[top].chains * else_if + unit;
                    top--;
                }
                here = &levels[top];
                if (c == '}') { /* the block ends the statement that opened it */
                    cost -= here->ops;
                    here->ops = 0;
                    if (!is_word(t, next, "else")) { /* and any if-chain */
                        cost -= here->chains * else_if;
                        here->chains = 0;
                    }
                }
            } else if (punct_in(cur, "+-*/%&|^!~<>=.")) {
                here->ops++;
                cost++;
            }
        }
        if (cost >= limit) {
            st = too_deep(t, cur, max_depth, levels, top, cost);
            break;
        }
        cur = next;
    }
    free(levels);
    return st;
}

size_t vn_wgsl_compile_stack(size_t len) {
    if (len > VN_WGSL_MAX_SOURCE_BYTES) len = VN_WGSL_MAX_SOURCE_BYTES; /* refused before: no compile */
    return (size_t)VN_WGSL_STACK_BASE_KIB * 1024u + len * (size_t)VN_WGSL_STACK_BYTES_PER_BYTE;
}

vn_status vn_wgsl_check_size(const char *wgsl, size_t len) {
    if (len <= VN_WGSL_MAX_SOURCE_BYTES) return VN_OK;
    unsigned long long line, column;
    vn_wgsl_place(wgsl, len, VN_WGSL_MAX_SOURCE_BYTES, &line, &column, NULL, NULL);
    vn_status st = vn_fail(VN_ERROR_SHADER,
                           "line %llu, column %llu: the WGSL is %zu bytes long, past the %d bytes vyre_native compiles "
                           "(it gives wgpu-native's compiler, which recurses once per link of a chain of declarations, "
                           "a stack sized to the source, and bounds that stack). Fix: split the module into several "
                           "smaller ones.",
                           line, column, len, VN_WGSL_MAX_SOURCE_BYTES);
    vn_set_error_position(line > UINT32_MAX ? UINT32_MAX : (uint32_t)line,
                          column > UINT32_MAX ? UINT32_MAX : (uint32_t)column);
    return st;
}

vn_status vn_wgsl_check_nesting(const char *wgsl, size_t len, uint32_t max_depth) {
    if (wgsl == NULL && len != 0)
        return vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_wgsl_check_nesting: NULL text of %zu bytes. Fix: pass the WGSL.",
                       len);
    if (len == 0) return VN_OK;
    text t = {(const unsigned char *)wgsl, len};
    unsigned char *marks = NULL;
    vn_status st = find_templates(&t, &marks);
    if (st == VN_OK) st = walk(&t, marks, max_depth);
    free(marks);
    return st;
}
