/* library_file.c - is the wgpu-native file whole, before the system loader maps it?
 *
 * A loader maps a library's segments straight from the file. A truncated copy (an
 * interrupted download or pip install, a full disk) still has a valid header, so it
 * maps, and touching a page past the end of the file raises SIGBUS inside dlopen:
 * the process dies before any error can be returned. So the file is checked first:
 * a regular file, the executable format of this platform for this architecture,
 * and every segment and table its header names inside the file. What remains is a
 * file that changes between this check and the load, and a bare file name, which the
 * system loader looks up in its own search path (the caller checks only paths). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layer_base.h"

/* This platform's format and architecture, in the codes each format uses. */
#if defined(VN_NATIVE_FORMAT)
/* given by the build (a test of another platform's checks) */
#elif defined(_WIN32)
#define VN_NATIVE_FORMAT "PE"
#elif defined(__APPLE__)
#define VN_NATIVE_FORMAT "Mach-O"
#else
#define VN_NATIVE_FORMAT "ELF"
#endif

#if defined(__x86_64__) || defined(_M_X64) || defined(_M_AMD64)
enum { ELF_MACHINE = 62, MACHO_CPU = 0x01000007, PE_MACHINE = 0x8664 };
#elif defined(__aarch64__) || defined(_M_ARM64)
enum { ELF_MACHINE = 183, MACHO_CPU = 0x0100000c, PE_MACHINE = 0xaa64 };
#elif defined(__i386__) || defined(_M_IX86)
enum { ELF_MACHINE = 3, MACHO_CPU = 7, PE_MACHINE = 0x14c };
#elif defined(__arm__) || defined(_M_ARM)
enum { ELF_MACHINE = 40, MACHO_CPU = 12, PE_MACHINE = 0x1c4 };
#elif defined(__riscv)
enum { ELF_MACHINE = 243, MACHO_CPU = -1, PE_MACHINE = -1 };
#elif defined(__powerpc64__)
enum { ELF_MACHINE = 21, MACHO_CPU = -1, PE_MACHINE = -1 };
#elif defined(__s390x__)
enum { ELF_MACHINE = 22, MACHO_CPU = -1, PE_MACHINE = -1 };
#elif defined(__loongarch64)
enum { ELF_MACHINE = 258, MACHO_CPU = -1, PE_MACHINE = -1 };
#else
enum { ELF_MACHINE = -1, MACHO_CPU = -1, PE_MACHINE = -1 }; /* unknown here: not compared */
#endif

/* Header tables this large are no library's: refused rather than read. */
enum { TABLE_LIMIT = 1 << 20, HEAD = 4096 };

typedef struct image {
    vn_file *file;
    uint64_t base, size; /* the part being checked (a fat Mach-O's slice) */
    bool big;            /* big-endian fields */
    char *why;
    size_t cap;
} image;

static uint64_t rd(const uint8_t *p, int n, bool big) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
    return v;
}

static bool host_big_endian(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 0;
}

static bool fail(image *im, const char *fmt, ...) VN_PRINTF_LIKE(2, 3);

/* Record why the file is refused; false, so call sites read `return fail(...)`. */
static bool fail(image *im, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vn_vformat(im->why, im->cap, fmt, args);
    va_end(args);
    return false;
}

/* True when [offset, offset + length) lies inside the part checked. */
static bool inside(const image *im, uint64_t offset, uint64_t length) {
    return offset <= im->size && length <= im->size - offset;
}

/* The `length` bytes at `offset` of the part, into a buffer of its own (free it); NULL
 * when they are not all in the file. */
static uint8_t *read_table(image *im, uint64_t offset, uint64_t length, const char *what) {
    if (length > TABLE_LIMIT) {
        fail(im, "its %s claims %llu bytes, more than any library has", what, (unsigned long long)length);
        return NULL;
    }
    if (!inside(im, offset, length)) {
        char end[VN_SUM_TEXT];
        fail(im, "its %s (bytes %llu to %s) lies past the end of the file: the file is truncated", what,
             (unsigned long long)offset, vn_sum_text(offset, length, end));
        return NULL;
    }
    uint8_t *buf = malloc(length ? (size_t)length : 1);
    if (buf == NULL) {
        fail(im, "no memory to read its %s", what);
        return NULL;
    }
    if (vn_file_read_at(im->file, im->base + offset, buf, (size_t)length) != length) {
        fail(im, "its %s could not be read", what);
        free(buf);
        return NULL;
    }
    return buf;
}

/* A region the loader maps or reads: past the end of the file is the truncation. */
static bool region_inside(image *im, const char *what, unsigned index, uint64_t offset, uint64_t length) {
    if (inside(im, offset, length)) return true;
    char end[VN_SUM_TEXT];
    return fail(im, "its %s %u (bytes %llu to %s) ends past the end of the file: the file is truncated", what,
                index, (unsigned long long)offset, vn_sum_text(offset, length, end));
}

static bool check_elf(image *im, const uint8_t *h, size_t got) {
    bool is64 = h[4] == 2;
    if ((h[4] != 1 && h[4] != 2) || (h[5] != 1 && h[5] != 2)) return fail(im, "its ELF header is malformed");
    im->big = h[5] == 2;
    if (is64 != (sizeof(void *) == 8) || im->big != host_big_endian())
        return fail(im, "it is a %d-bit %s-endian ELF file, which this %d-bit process cannot load", is64 ? 64 : 32,
                    im->big ? "big" : "little", (int)(8 * sizeof(void *)));
    if (got < (is64 ? 64u : 52u)) return fail(im, "its ELF header is cut off");
    uint64_t type = rd(h + 16, 2, im->big), machine = rd(h + 18, 2, im->big);
    if (type != 3) return fail(im, "it is an ELF file of type %llu, not a shared library (type 3)", (unsigned long long)type);
    if (ELF_MACHINE >= 0 && machine != (uint64_t)ELF_MACHINE)
        return fail(im, "it is an ELF library for machine %llu, not this one (%d)", (unsigned long long)machine,
                    (int)ELF_MACHINE);
    uint64_t phoff = is64 ? rd(h + 32, 8, im->big) : rd(h + 28, 4, im->big);
    uint64_t shoff = is64 ? rd(h + 40, 8, im->big) : rd(h + 32, 4, im->big);
    const uint8_t *f = h + (is64 ? 54 : 42);
    uint64_t phentsize = rd(f, 2, im->big), phnum = rd(f + 2, 2, im->big);
    uint64_t shentsize = rd(f + 4, 2, im->big), shnum = rd(f + 6, 2, im->big);
    if (phnum == 0 || phentsize < (is64 ? 56u : 32u)) return fail(im, "it has no program headers");
    uint8_t *ph = read_table(im, phoff, phnum * phentsize, "program header table");
    if (ph == NULL) return false;
    bool ok = true;
    for (uint64_t i = 0; i < phnum && ok; i++) {
        const uint8_t *e = ph + i * phentsize;
        uint64_t kind = rd(e, 4, im->big);
        if (kind != 1 && kind != 2) continue; /* PT_LOAD and PT_DYNAMIC: what the loader maps and reads */
        uint64_t offset = is64 ? rd(e + 8, 8, im->big) : rd(e + 4, 4, im->big);
        uint64_t filesz = is64 ? rd(e + 32, 8, im->big) : rd(e + 16, 4, im->big);
        ok = region_inside(im, "segment", (unsigned)i, offset, filesz);
    }
    free(ph);
    /* The section table comes last in the file: a file cut anywhere loses it. */
    uint64_t shend = shoff + (shnum ? shnum : 1) * shentsize; /* no overflow: 16-bit count and size */
    if (ok && shoff != 0 && (shend < shoff || !inside(im, shoff, shend - shoff)))
        ok = fail(im, "its section table ends at byte %llu, past the end of the file: the file is truncated",
                  (unsigned long long)shend);
    return ok;
}

static bool check_macho(image *im, const uint8_t *h, size_t got) {
    uint64_t magic = rd(h, 4, false);
    bool is64 = magic == 0xfeedfacfu || magic == 0xcffaedfeu;
    im->big = magic == 0xcefaedfeu || magic == 0xcffaedfeu;
    if (is64 != (sizeof(void *) == 8) || im->big != host_big_endian())
        return fail(im, "it is a %d-bit %s-endian Mach-O file, which this %d-bit process cannot load", is64 ? 64 : 32,
                    im->big ? "big" : "little", (int)(8 * sizeof(void *)));
    if (got < 32) return fail(im, "its Mach-O header is cut off");
    uint64_t cpu = rd(h + 4, 4, im->big), filetype = rd(h + 12, 4, im->big);
    uint64_t ncmds = rd(h + 16, 4, im->big), sizeofcmds = rd(h + 20, 4, im->big);
    if (MACHO_CPU >= 0 && cpu != (uint64_t)MACHO_CPU)
        return fail(im, "it is a Mach-O library for CPU type 0x%llx, not this one (0x%x)", (unsigned long long)cpu,
                    (unsigned)MACHO_CPU);
    if (filetype != 6 && filetype != 8)
        return fail(im, "it is a Mach-O file of type %llu, not a dynamic library (6) or bundle (8)",
                    (unsigned long long)filetype);
    uint8_t *cmds = read_table(im, is64 ? 32 : 28, sizeofcmds, "load commands");
    if (cmds == NULL) return false;
    bool ok = true;
    uint64_t at = 0;
    for (uint64_t i = 0; i < ncmds && ok; i++) {
        if (at + 8 > sizeofcmds) {
            ok = fail(im, "its load command %llu runs past the load commands", (unsigned long long)i);
            break;
        }
        uint64_t cmd = rd(cmds + at, 4, im->big), cmdsize = rd(cmds + at + 4, 4, im->big);
        if (cmdsize < 8 || cmdsize > sizeofcmds - at) {
            ok = fail(im, "its load command %llu has a bad size (%llu)", (unsigned long long)i,
                      (unsigned long long)cmdsize);
            break;
        }
        if (cmd == 0x19 && cmdsize >= 56) /* LC_SEGMENT_64: fileoff, filesize */
            ok = region_inside(im, "segment", (unsigned)i, rd(cmds + at + 40, 8, im->big),
                               rd(cmds + at + 48, 8, im->big));
        else if (cmd == 0x1 && cmdsize >= 40) /* LC_SEGMENT */
            ok = region_inside(im, "segment", (unsigned)i, rd(cmds + at + 32, 4, im->big),
                               rd(cmds + at + 36, 4, im->big));
        at += cmdsize;
    }
    free(cmds);
    return ok;
}

/* A universal (fat) Mach-O: check the slice of this architecture. */
static bool check_fat(image *im, const uint8_t *h, size_t got) {
    bool wide = rd(h, 4, true) == 0xcafebabfu; /* fat_arch_64 entries */
    uint64_t n = rd(h + 4, 4, true), entry = wide ? 32 : 20;
    if (n == 0 || n > 64) return fail(im, "its universal header lists %llu architectures", (unsigned long long)n);
    if (got < 8 + n * entry) return fail(im, "its universal header is cut off");
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *e = h + 8 + i * entry;
        if (MACHO_CPU < 0 || rd(e, 4, true) != (uint64_t)MACHO_CPU) continue;
        uint64_t offset = wide ? rd(e + 8, 8, true) : rd(e + 8, 4, true);
        uint64_t size = wide ? rd(e + 16, 8, true) : rd(e + 12, 4, true);
        if (!region_inside(im, "architecture slice", (unsigned)i, offset, size)) return false;
        uint8_t slice[HEAD];
        size_t have = vn_file_read_at(im->file, offset, slice, size < HEAD ? (size_t)size : HEAD);
        image part = {im->file, offset, size, false, im->why, im->cap};
        if (have < 4) return fail(im, "its architecture slice %llu is empty", (unsigned long long)i);
        return check_macho(&part, slice, have);
    }
    return fail(im, "its universal binary has no slice for this CPU (type 0x%x)", (unsigned)MACHO_CPU);
}

static bool check_pe(image *im, const uint8_t *h, size_t got) {
    if (got < 64) return fail(im, "its DOS header is cut off");
    uint64_t pe = rd(h + 0x3c, 4, false);
    uint8_t coff[24];
    if (!inside(im, pe, sizeof coff) || vn_file_read_at(im->file, pe, coff, sizeof coff) != sizeof coff)
        return fail(im, "its PE header (byte %llu) lies past the end of the file: the file is truncated",
                    (unsigned long long)pe);
    if (memcmp(coff, "PE\0\0", 4) != 0) return fail(im, "it has a DOS header but no PE signature");
    uint64_t machine = rd(coff + 4, 2, false), sections = rd(coff + 6, 2, false);
    uint64_t optional = rd(coff + 20, 2, false);
    if (PE_MACHINE >= 0 && machine != (uint64_t)PE_MACHINE)
        return fail(im, "it is a PE library for machine 0x%llx, not this one (0x%x)", (unsigned long long)machine,
                    (unsigned)PE_MACHINE);
    uint8_t *table = read_table(im, pe + 24 + optional, sections * 40, "section table");
    if (table == NULL) return false;
    bool ok = true;
    for (uint64_t i = 0; i < sections && ok; i++) {
        const uint8_t *e = table + i * 40;
        ok = region_inside(im, "section", (unsigned)i, rd(e + 20, 4, false), rd(e + 16, 4, false));
    }
    free(table);
    return ok;
}

/* The executable format the first bytes name, NULL for none. */
static const char *format_of(const uint8_t *h, size_t got) {
    if (got < 4) return NULL;
    uint64_t le = rd(h, 4, false), be = rd(h, 4, true);
    if (memcmp(h, "\x7f" "ELF", 4) == 0) return "ELF";
    if (be == 0xcafebabeu || be == 0xcafebabfu) return "Mach-O universal";
    if (le == 0xfeedfaceu || le == 0xfeedfacfu || le == 0xcefaedfeu || le == 0xcffaedfeu) return "Mach-O";
    if (h[0] == 'M' && h[1] == 'Z') return "PE";
    return NULL;
}

bool vn_library_file_check(const char *path, uint64_t *size, char *why, size_t cap) {
    vn_file *file = vn_file_open(path, size, why, cap);
    if (file == NULL) {
        *size = UINT64_MAX;
        return false;
    }
    uint8_t head[HEAD];
    size_t got = vn_file_read_at(file, 0, head, *size < HEAD ? (size_t)*size : HEAD);
    image im = {file, 0, *size, false, why, cap};
    const char *format = format_of(head, got);
    bool ok;
    if (*size == 0)
        ok = fail(&im, "it is empty");
    else if (format == NULL)
        ok = fail(&im, "it is no shared library (its first bytes are not an ELF, Mach-O or PE header)");
    else if (strncmp(format, VN_NATIVE_FORMAT, strlen(VN_NATIVE_FORMAT)) != 0)
        ok = fail(&im, "it is in the %s format, but this platform loads %s libraries", format, VN_NATIVE_FORMAT);
    else if (strcmp(format, "ELF") == 0)
        ok = check_elf(&im, head, got);
    else if (strcmp(format, "PE") == 0)
        ok = check_pe(&im, head, got);
    else if (strcmp(format, "Mach-O") == 0)
        ok = check_macho(&im, head, got);
    else
        ok = check_fat(&im, head, got);
    vn_file_close(file);
    return ok;
}
