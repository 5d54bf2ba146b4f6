/* The compiled column builder for Kineto traces: one pass over a piece of the event array (the text between
 * two event boundaries, `{...},{...}`) writing each field straight into its column.
 *
 * A scanner of our own, written for the chrome-trace shape only: it accepts strictly less than msgspec's typed
 * decode (schema.Ev) does, and anything it is not sure of (a string pid, an escaped key, a number it cannot
 * convert exactly, invalid UTF-8 anywhere, nesting deeper than MAX_DEPTH, a duplicate field, a value of the wrong
 * type, ...) makes `scan` return None: the caller then decodes that piece with the Python path, which gives the
 * result or the error it always gave. What it accepts it converts exactly as the Python path does
 * (compiled.py builds the same `Part` from these columns; the tests compare both paths).
 *
 * Safety: every read is bounds-checked against the buffer's end; no length or count in the input is trusted
 * (columns grow as events are found); the recursion depth is bounded. A piece is usually a memory map of the
 * trace file: if the file is truncated while it is read, a read past its new end is a SIGBUS, which the guard
 * (below) turns into a `DataVanished` error (an OSError) instead of the process's end. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <setjmp.h>
#include <signal.h>
#define GUARD 1
#endif

#define MAX_DEPTH 64
#define NO_ID (-1)

typedef const unsigned char *cp;

/* ---- growable byte buffers ---- */

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) {
        if (cap > ((size_t)1 << 60)) return -1;
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n)) return -1;
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

#define PUT(b, v) buf_put((b), &(v), sizeof(v))

static void buf_free(Buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- first-occurrence interning of decoded strings ---- */

typedef struct {
    Buf arena;   /* the distinct strings' bytes, one after the other */
    Buf offs;    /* size_t offset per distinct string (and its end: offs[k+1], arena.len for the last) */
    uint32_t *slots; /* code + 1, 0: empty */
    uint64_t *hashes;
    size_t nslots, n;
} Intern;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

static size_t str_off(Intern *t, size_t k) { return ((size_t *)t->offs.p)[k]; }
static size_t str_end(Intern *t, size_t k) { return k + 1 < t->n ? str_off(t, k + 1) : t->arena.len; }

static int intern_grow(Intern *t) {
    size_t ns = t->nslots ? t->nslots * 2 : 64;
    uint32_t *slots = calloc(ns, sizeof(uint32_t));
    uint64_t *hashes = realloc(t->hashes, ns * sizeof(uint64_t));
    if (!slots || !hashes) {
        free(slots);
        if (hashes) t->hashes = hashes;
        return -1;
    }
    t->hashes = hashes; /* per code (only the first n are used) */
    for (size_t k = 0; k < t->n; k++) {
        size_t i = t->hashes[k] & (ns - 1);
        while (slots[i]) i = (i + 1) & (ns - 1);
        slots[i] = (uint32_t)(k + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
    return 0;
}

/* The code of `s` (first-occurrence order); -1 on memory exhaustion. */
static int32_t intern(Intern *t, const char *s, size_t n) {
    if (t->n * 2 >= t->nslots && intern_grow(t)) return -1;
    if (t->n >= 0x7fffffff) return -1;
    uint64_t h = hash_bytes(s, n);
    size_t mask = t->nslots - 1, i = h & mask;
    while (t->slots[i]) {
        size_t k = t->slots[i] - 1;
        if (t->hashes[k] == h) {
            size_t a = str_off(t, k), e = str_end(t, k);
            if (e - a == n && memcmp(t->arena.p + a, s, n) == 0) return (int32_t)k;
        }
        i = (i + 1) & mask;
    }
    size_t off = t->arena.len;
    if (buf_put(&t->arena, s, n) || PUT(&t->offs, off)) return -1;
    t->hashes[t->n] = h;
    t->slots[i] = (uint32_t)(t->n + 1);
    return (int32_t)t->n++;
}

static void intern_free(Intern *t) {
    buf_free(&t->arena);
    buf_free(&t->offs);
    free(t->slots);
    free(t->hashes);
}

static PyObject *intern_list(Intern *t) {
    PyObject *out = PyList_New((Py_ssize_t)t->n);
    if (!out) return NULL;
    for (size_t k = 0; k < t->n; k++) {
        size_t a = str_off(t, k), e = str_end(t, k);
        PyObject *s = PyUnicode_DecodeUTF8(t->arena.p + a, (Py_ssize_t)(e - a), "strict");
        if (!s) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)k, s);
    }
    return out;
}

/* ---- first-occurrence codes of int64 values (a kept event's pid and tid) ---- */

typedef struct {
    Buf values;      /* int64 per code, first-occurrence order */
    uint32_t *slots; /* code + 1, 0: empty */
    size_t nslots, n;
} Ints;

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static int ints_grow(Ints *t) {
    size_t ns = t->nslots ? t->nslots * 2 : 16;
    uint32_t *slots = calloc(ns, sizeof(uint32_t));
    if (!slots) return -1;
    const int64_t *v = (const int64_t *)t->values.p;
    for (size_t k = 0; k < t->n; k++) {
        size_t i = mix64((uint64_t)v[k]) & (ns - 1);
        while (slots[i]) i = (i + 1) & (ns - 1);
        slots[i] = (uint32_t)(k + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
    return 0;
}

static int32_t ints_code(Ints *t, int64_t x) {
    if (t->n * 2 >= t->nslots && ints_grow(t)) return -1;
    if (t->n >= 0x7fffffff) return -1;
    size_t mask = t->nslots - 1, i = mix64((uint64_t)x) & mask;
    const int64_t *v = (const int64_t *)t->values.p;
    while (t->slots[i]) {
        size_t k = t->slots[i] - 1;
        if (v[k] == x) return (int32_t)k;
        i = (i + 1) & mask;
    }
    if (PUT(&t->values, x)) return -1;
    t->slots[i] = (uint32_t)(t->n + 1);
    return (int32_t)t->n++;
}

static void ints_free(Ints *t) {
    buf_free(&t->values);
    free(t->slots);
    t->slots = NULL;
}

/* ---- the scanner ---- */

enum { OK = 0, BAIL = 1, NOMEM = 2, VANISHED = 3 };

/* ---- SIGBUS while a mapped buffer is read (its file truncated meanwhile) ----
 * The thread reading the buffer [guard_lo, guard_hi) notes where to jump back to; a SIGBUS at an address inside
 * it jumps there (the read is abandoned: `VANISHED`). Any other SIGBUS gets the disposition there was before
 * (restored, the faulting read then happens again under it). Only the scanner's own reads run under the guard:
 * no lock is held and nothing is half-allocated when they fault. */
#ifdef GUARD
static __thread sigjmp_buf *guard_jmp;
static __thread const char *guard_lo, *guard_hi;
static struct sigaction guard_old;

static void guard_handler(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    (void)ctx;
    sigjmp_buf *j = guard_jmp;
    const char *a = info ? (const char *)info->si_addr : NULL;
    if (j && a && a >= guard_lo && a < guard_hi) {
        guard_jmp = NULL;
        siglongjmp(*j, 1);
    }
    sigaction(SIGBUS, &guard_old, NULL);
}

/* Our handler in place (called with the GIL held: one thread at a time). */
static void guard_install(void) {
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) != 0) return;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == guard_handler) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = guard_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &cur) == 0) guard_old = cur;
}
#endif

/* `fn(arg)` under the guard over [lo, lo + len): its result, or VANISHED when a read in it faulted (the jump
 * lands here, in the frame that stays alive while `fn` runs). Called without the GIL, after `guard_install`. */
static int guarded(const void *lo, Py_ssize_t len, int (*fn)(void *), void *arg) {
#ifdef GUARD
    sigjmp_buf jb;
    volatile int r = VANISHED;
    guard_lo = (const char *)lo;
    guard_hi = guard_lo + len;
    if (sigsetjmp(jb, 1) == 0) {
        guard_jmp = &jb;
        r = fn(arg);
    }
    guard_jmp = NULL;
    return r;
#else
    (void)lo;
    (void)len;
    return fn(arg);
#endif
}

typedef struct {
    cp p, end;
    Buf scratch; /* a decoded string with escapes */
} S;

static inline int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static inline void skip_ws(S *s) {
    while (s->p < s->end && is_ws(*s->p)) s->p++;
}

typedef struct {
    cp a;       /* the content (after the opening quote) */
    size_t len; /* raw content length */
    int esc;    /* has a backslash escape */
} Str;

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(cp p, cp end, unsigned *out) {
    if (end - p < 4) return BAIL;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return BAIL;
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return OK;
}

/* Length (2-4) of the valid UTF-8 sequence at p (first byte >= 0x80), 0 when invalid (overlong, surrogate,
 * beyond U+10FFFF, cut short). */
static int utf8_len(cp p, cp end) {
    unsigned c = p[0];
    ptrdiff_t left = end - p;
    if (c >= 0xC2 && c <= 0xDF) return left >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0;  /* overlong */
        if (c == 0xED && p[1] >= 0xA0) return 0; /* surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0;
        if (c == 0xF4 && p[1] >= 0x90) return 0;
        return 4;
    }
    return 0;
}

/* Bytes a string scan must look at: the quote, a backslash, control characters and non-ASCII (8 at a time). */
static inline uint64_t special8(uint64_t x) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t zq = (q - ones) & ~q, zb = (b - ones) & ~b, ctl = (x - ones * 0x20) & ~x;
    return (zq | zb | ctl | x) & high;
}

/* A string at s->p (on its opening quote): validated strictly, s->p moved past the closing quote. */
static int scan_string(S *s, Str *out) {
    cp p = s->p + 1, end = s->end;
    out->a = p;
    out->esc = 0;
    while (p < end) {
#if defined(__SSE2__)
        while (end - p >= 16) { /* plain ASCII runs, 16 bytes at a time (every byte read is before `end`) */
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            /* signed compare: bytes below 0x20 and at or above 0x80 (negative) are both "less than 0x20" */
            __m128i sp = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                   _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
            int mask = _mm_movemask_epi8(sp);
            if (mask) {
                p += __builtin_ctz((unsigned)mask);
                break;
            }
            p += 16;
        }
#endif
        while (end - p >= 8) { /* plain ASCII runs, a word at a time */
            uint64_t x;
            memcpy(&x, p, 8);
            if (special8(x)) break;
            p += 8;
        }
        if (p >= end) break;
        unsigned char c = *p;
        if (c == '"') {
            out->len = (size_t)(p - out->a);
            s->p = p + 1;
            return OK;
        }
        if (c < 0x20) return BAIL;
        if (c == '\\') {
            out->esc = 1;
            if (p + 1 >= end) return BAIL;
            unsigned char e = p[1];
            if (e == 'u') {
                unsigned v;
                if (hex4(p + 2, end, &v)) return BAIL;
                p += 6;
                if (v >= 0xD800 && v <= 0xDBFF) { /* a high surrogate: its low half must follow */
                    unsigned w;
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, end, &w)) return BAIL;
                    if (w < 0xDC00 || w > 0xDFFF) return BAIL;
                    p += 6;
                } else if (v >= 0xDC00 && v <= 0xDFFF) {
                    return BAIL;
                }
                continue;
            }
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
                continue;
            }
            return BAIL;
        }
        if (c >= 0x80) {
            int k = utf8_len(p, end);
            if (!k) return BAIL;
            p += k;
            continue;
        }
        p++;
    }
    return BAIL; /* unterminated */
}

static void put_utf8(char **o, unsigned v) {
    char *q = *o;
    if (v < 0x80) {
        *q++ = (char)v;
    } else if (v < 0x800) {
        *q++ = (char)(0xC0 | (v >> 6));
        *q++ = (char)(0x80 | (v & 0x3F));
    } else if (v < 0x10000) {
        *q++ = (char)(0xE0 | (v >> 12));
        *q++ = (char)(0x80 | ((v >> 6) & 0x3F));
        *q++ = (char)(0x80 | (v & 0x3F));
    } else {
        *q++ = (char)(0xF0 | (v >> 18));
        *q++ = (char)(0x80 | ((v >> 12) & 0x3F));
        *q++ = (char)(0x80 | ((v >> 6) & 0x3F));
        *q++ = (char)(0x80 | (v & 0x3F));
    }
    *o = q;
}

/* The decoded UTF-8 bytes of a string validated by scan_string (escapes resolved into s->scratch). */
static int decode_str(S *s, const Str *in, const char **d, size_t *n) {
    if (!in->esc) {
        *d = (const char *)in->a;
        *n = in->len;
        return OK;
    }
    s->scratch.len = 0;
    if (buf_reserve(&s->scratch, in->len + 4)) return NOMEM; /* decoded is never longer than escaped */
    char *o = s->scratch.p;
    cp p = in->a, end = in->a + in->len;
    while (p < end) {
        if (*p != '\\') {
            *o++ = (char)*p++;
            continue;
        }
        unsigned char e = p[1];
        if (e == 'u') {
            unsigned v = 0; /* set by hex4: scan_string validated this escape */
            hex4(p + 2, end, &v);
            p += 6;
            if (v >= 0xD800 && v <= 0xDBFF) {
                unsigned w = 0;
                hex4(p + 2, end, &w);
                p += 6;
                v = 0x10000 + ((v - 0xD800) << 10) + (w - 0xDC00);
            }
            put_utf8(&o, v);
            continue;
        }
        char c = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : (char)e;
        *o++ = c;
        p += 2;
    }
    *d = s->scratch.p;
    *n = (size_t)(o - s->scratch.p);
    return OK;
}

typedef struct {
    cp a;
    size_t len;
    int is_int;
    int digits; /* integer digits (is_int) */
    double d;   /* its value, once number_value converted it */
} Num;

/* A JSON number at s->p: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(S *s, Num *out) {
    cp p = s->p, end = s->end;
    out->a = p;
    out->is_int = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) return BAIL;
    cp d0 = p;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return BAIL;
    }
    out->digits = (int)((p - d0) > 1000 ? 1000 : (p - d0));
    if (p < end && *p == '.') {
        out->is_int = 0;
        p++;
        cp f = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p == f) return BAIL;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        out->is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        cp f = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p == f) return BAIL;
    }
    /* a number must end at a delimiter (msgspec: `1x` is malformed; here anything else fails later anyway) */
    out->len = (size_t)(p - out->a);
    s->p = p;
    return OK;
}

/* An integer of at most 18 digits (exact in int64); BAIL otherwise. */
static int num_int64(const Num *n, int64_t *v) {
    if (!n->is_int || n->digits > 18) return BAIL;
    cp p = n->a, end = n->a + n->len;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    int64_t x = 0;
    while (p < end) x = x * 10 + (*p++ - '0');
    *v = neg ? -x : x;
    return OK;
}

/* The float msgspec gives for a `float` field: ints of up to 18 digits converted exactly as Python's float(int)
 * (round to nearest), other numbers by strtod (correctly rounded, as msgspec's parser); BAIL when out of range
 * (msgspec: an error, or 0.0 for an underflow: left to the Python path) or too long to copy. */
static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#if defined(__SIZEOF_INT128__)
/* m / 10^k (m < 10^19, 1 <= k <= 19) correctly rounded to the nearest double (ties to even), in integer
 * arithmetic: the quotient of m * 2^s by 10^k carries at least 63 significant bits, its low bits and the
 * remainder decide the rounding. The result strtod gives, without strtod's big-number path (the 17-digit
 * timestamps of a Kineto trace: 1712195496708492.5). 0: not this case. */
static int exact_quotient(uint64_t m, int k, int neg, double *v) {
    if (m == 0 || k < 1 || k > 19) return 0;
    uint64_t pk = 1;
    for (int i = 0; i < k; i++) pk *= 10;
    int s = 127 - (63 - __builtin_clzll(m)) - 1; /* m * 2^s < 2^127 */
    unsigned __int128 num = (unsigned __int128)m << s;
    unsigned __int128 q = num / pk;
    int sticky = (num % pk) != 0;
    uint64_t hi = (uint64_t)(q >> 64), lo = (uint64_t)q;
    int bits = hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
    if (bits <= 53) return 0; /* (cannot happen: q >= 2^62) */
    int shift = bits - 53;
    uint64_t mant = (uint64_t)(q >> shift);
    unsigned __int128 rest = q & (((unsigned __int128)1 << shift) - 1), half = (unsigned __int128)1 << (shift - 1);
    if (rest > half || (rest == half && (sticky || (mant & 1)))) mant++;
    double d = ldexp((double)mant, shift - s);
    *v = neg ? -d : d;
    return 1;
}
#else
static int exact_quotient(uint64_t m, int k, int neg, double *v) { return 0; }
#endif

/* Clinger's fast path: a decimal whose significant digits (trailing fraction zeros dropped) make an integer below
 * 2^53 and whose power of ten is at most 22 is exactly m / 10^k or m * 10^k, one correctly rounded operation on
 * two exact doubles. 0: not this case (strtod decides). */
static int fast_double(const Num *n, double *v) {
    cp p = n->a, end = n->a + n->len;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    uint64_t m = 0;
    int sig = 0, frac = 0;
    cp q = p;
    while (q < end && *q >= '0' && *q <= '9') {
        if (sig || *q != '0') sig++;
        if (sig > 19) return 0;
        m = m * 10 + (uint64_t)(*q - '0');
        q++;
    }
    if (q < end && *q == '.') {
        q++;
        cp f0 = q, f1 = q;
        while (f1 < end && *f1 >= '0' && *f1 <= '9') f1++;
        cp last = f1; /* drop trailing zeros of the fraction */
        while (last > f0 && last[-1] == '0') last--;
        for (cp r = f0; r < last; r++) {
            if (sig || *r != '0') sig++;
            if (sig > 19) return 0;
            m = m * 10 + (uint64_t)(*r - '0');
            frac++;
        }
        q = f1;
    }
    if (q != end) return 0; /* an exponent: strtod */
    if (m < ((uint64_t)1 << 53) && frac <= 22) {
        double d = (double)m;
        if (frac) d /= POW10[frac];
        *v = neg ? -d : d;
        return 1;
    }
    return exact_quotient(m, frac, neg, v);
}

static int num_double(const Num *n, double *v) {
    int64_t i;
    if (n->is_int && num_int64(n, &i) == OK) {
        *v = (double)i;
        return OK;
    }
    if (fast_double(n, v)) return OK;
    char tmp[128];
    if (n->len >= sizeof(tmp)) return BAIL;
    memcpy(tmp, n->a, n->len);
    tmp[n->len] = 0;
    errno = 0;
    char *e;
    double d = strtod(tmp, &e);
    if (errno || e != tmp + n->len || !isfinite(d)) return BAIL;
    if (d == 0.0) { /* 0 is fine only when every digit is 0 (otherwise an underflow: left to Python) */
        for (size_t k = 0; k < n->len; k++) {
            if (tmp[k] == 'e' || tmp[k] == 'E') break;
            if (tmp[k] >= '1' && tmp[k] <= '9') return BAIL;
        }
    }
    *v = d;
    return OK;
}

static int skip_value(S *s, int depth);

static int lit(S *s, const char *w, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0) return BAIL;
    s->p += n;
    return OK;
}

static int skip_value(S *s, int depth) {
    if (s->p >= s->end) return BAIL;
    unsigned char c = *s->p;
    if (c == '"') {
        Str x;
        return scan_string(s, &x);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        Num x;
        return scan_number(s, &x);
    }
    if (c == 't') return lit(s, "true", 4);
    if (c == 'f') return lit(s, "false", 5);
    if (c == 'n') return lit(s, "null", 4);
    if (depth >= MAX_DEPTH) return BAIL;
    if (c == '[') {
        s->p++;
        skip_ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return OK;
        }
        for (;;) {
            if (skip_value(s, depth + 1)) return BAIL;
            skip_ws(s);
            if (s->p >= s->end) return BAIL;
            if (*s->p == ']') {
                s->p++;
                return OK;
            }
            if (*s->p != ',') return BAIL;
            s->p++;
            skip_ws(s);
        }
    }
    if (c == '{') {
        s->p++;
        skip_ws(s);
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return OK;
        }
        for (;;) {
            Str k;
            if (s->p >= s->end || *s->p != '"' || scan_string(s, &k)) return BAIL;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':') return BAIL;
            s->p++;
            skip_ws(s);
            if (skip_value(s, depth + 1)) return BAIL;
            skip_ws(s);
            if (s->p >= s->end) return BAIL;
            if (*s->p == '}') {
                s->p++;
                return OK;
            }
            if (*s->p != ',') return BAIL;
            s->p++;
            skip_ws(s);
        }
    }
    return BAIL;
}

/* Phase letters → codes (schema.PH); any other phase 0. */
static int ph_code(const Str *x) {
    if (x->len != 1 || x->esc) return 0;
    switch (x->a[0]) {
    case 'X': return 1;
    case 'i': return 2;
    case 'I': return 3;
    case 'B': return 4;
    case 'E': return 5;
    case 'M': return 6;
    case 's': return 7;
    case 'f': return 8;
    case 't': return 9;
    default: return 0;
    }
}

enum { F_PH = 1, F_NAME = 2, F_CAT = 4, F_TS = 8, F_DUR = 16, F_PID = 32, F_TID = 64, F_ID = 128, F_ARGS = 256 };
enum { T_INT = 1, T_STR = 2, T_NULL = 3 };

typedef struct {
    unsigned seen;
    Str ph, name, cat;
    Num ts, dur;
    int pid_t, tid_t, id_t;
    Num pid, tid, id;
    Str pid_s, tid_s;
    cp args_a, args_e;
    /* link ids (top-level args keys; ABSENT when absent) and whether the Python path must decide them */
    int64_t ext, legacy, corr;
    int8_t lrest;
} Fields;

#define ABSENT (INT64_MIN + 7)

typedef struct {
    Buf ph;
    /* kept (X, i, I) */
    Buf ts, dur, pid, tid, cat, name, astart, aend, blob;
    Intern cats, names;
    /* M, B, E: spans of the whole events */
    Buf ostart, oend;
    /* flows (s, f) */
    Buf fts, fpid, ftid, fid, fcat;
    Intern fcats;
    /* string pids/tids: 1 per event where the value is a string (the column then holds its code in `idstrs`) */
    Buf pidk, tidk, fpidk, ftidk;
    Intern idstrs;
    /* kept events' pid/tid first-occurrence codes, and their link ids */
    Buf combo, ext, legacy, corr, lrest; /* combo: code of the event's (cat, pid, tid) among `combos` */
    Ints pidu, tidu, combos;             /* combos: cat << 42 | pid code << 21 | tid code */
    int copy; /* 1: args copied into `blob` (offsets into it); 0: not copied (offsets into the piece) */
} Out;

static int id_value(S *s, Num *n, Str *x, int *t) {
    unsigned char c = *s->p;
    if (c == '"') {
        *t = T_STR;
        return scan_string(s, x);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        *t = T_INT;
        if (scan_number(s, n)) return BAIL;
        return n->is_int ? OK : BAIL; /* a float: msgspec's ValidationError (int | str) */
    }
    return BAIL;
}

static int string_value(S *s, Str *x) {
    if (*s->p != '"') return BAIL;
    return scan_string(s, x);
}

static int number_value(S *s, Num *n) {
    unsigned char c = *s->p;
    if (!(c == '-' || (c >= '0' && c <= '9'))) return BAIL;
    if (scan_number(s, n)) return BAIL;
    return num_double(n, &n->d); /* msgspec checks the range of every event's ts/dur */
}

static int key_is(const Str *k, const char *w, size_t n) { return k->len == n && memcmp(k->a, w, n) == 0; }

/* One link key's value: an int of up to 18 digits, else (a float, a string, null, a big int, the key twice)
 * the event's link ids are left to the Python path (`lrest`). */
static int link_value(S *s, Fields *f, int64_t *slot) {
    unsigned char c = *s->p;
    if (c == '-' || (c >= '0' && c <= '9')) {
        Num n;
        if (scan_number(s, &n)) return BAIL;
        int64_t v;
        if (*slot != ABSENT || num_int64(&n, &v)) {
            f->lrest = 1;
        } else {
            *slot = v;
        }
        return OK;
    }
    f->lrest = 1;
    return skip_value(s, 1);
}

/* The args value: validated as skip_value does, its top-level link keys read on the way (LinkArgs). */
static int scan_args(S *s, Fields *f) {
    if (*s->p != '{') {
        f->lrest = 1; /* not an object: msgspec's LinkArgs decode decides (it fails) */
        return skip_value(s, 0);
    }
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return OK;
    }
    for (;;) {
        Str k;
        if (s->p >= s->end || *s->p != '"' || scan_string(s, &k)) return BAIL;
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':') return BAIL;
        s->p++;
        skip_ws(s);
        if (s->p >= s->end) return BAIL;
        int r;
        if (k.esc) {
            f->lrest = 1; /* an escaped key may spell a link key */
            r = skip_value(s, 1);
        } else if (key_is(&k, "External id", 11)) {
            r = link_value(s, f, &f->ext);
        } else if (key_is(&k, "external id", 11)) {
            r = link_value(s, f, &f->legacy);
        } else if (key_is(&k, "correlation", 11)) {
            r = link_value(s, f, &f->corr);
        } else {
            r = skip_value(s, 1);
        }
        if (r) return BAIL;
        skip_ws(s);
        if (s->p >= s->end) return BAIL;
        if (*s->p == '}') {
            s->p++;
            return OK;
        }
        if (*s->p != ',') return BAIL;
        s->p++;
        skip_ws(s);
    }
}

static int scan_event(S *s, Fields *f) {
    /* s->p on '{' */
    s->p++;
    skip_ws(s);
    f->seen = 0;
    f->ext = f->legacy = f->corr = ABSENT;
    f->lrest = 0;
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return OK;
    }
    for (;;) {
        Str k;
        if (s->p >= s->end || *s->p != '"' || scan_string(s, &k) || k.esc) return BAIL;
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':') return BAIL;
        s->p++;
        skip_ws(s);
        if (s->p >= s->end) return BAIL;
        unsigned bit = 0;
        int r;
        switch (k.len) {
        case 2:
            if (key_is(&k, "ph", 2)) {
                bit = F_PH;
                r = string_value(s, &f->ph);
            } else if (key_is(&k, "ts", 2)) {
                bit = F_TS;
                r = number_value(s, &f->ts);
            } else if (key_is(&k, "id", 2)) {
                bit = F_ID;
                if (*s->p == 'n') {
                    f->id_t = T_NULL;
                    r = lit(s, "null", 4);
                } else {
                    Str unused;
                    r = id_value(s, &f->id, &unused, &f->id_t);
                }
            } else {
                r = skip_value(s, 0);
            }
            break;
        case 3:
            if (key_is(&k, "cat", 3)) {
                bit = F_CAT;
                r = string_value(s, &f->cat);
            } else if (key_is(&k, "dur", 3)) {
                bit = F_DUR;
                r = number_value(s, &f->dur);
            } else if (key_is(&k, "pid", 3)) {
                bit = F_PID;
                r = id_value(s, &f->pid, &f->pid_s, &f->pid_t);
            } else if (key_is(&k, "tid", 3)) {
                bit = F_TID;
                r = id_value(s, &f->tid, &f->tid_s, &f->tid_t);
            } else {
                r = skip_value(s, 0);
            }
            break;
        case 4:
            if (key_is(&k, "name", 4)) {
                bit = F_NAME;
                r = string_value(s, &f->name);
            } else if (key_is(&k, "args", 4)) {
                bit = F_ARGS;
                f->args_a = s->p;
                r = scan_args(s, f);
                f->args_e = s->p;
            } else {
                r = skip_value(s, 0);
            }
            break;
        default:
            r = skip_value(s, 0);
        }
        if (r) return BAIL;
        if (bit) {
            if (f->seen & bit) return BAIL; /* a duplicate field (msgspec: the last wins): the Python path */
            f->seen |= bit;
        }
        skip_ws(s);
        if (s->p >= s->end) return BAIL;
        if (*s->p == '}') {
            s->p++;
            return OK;
        }
        if (*s->p != ',') return BAIL;
        s->p++;
        skip_ws(s);
    }
}

/* A pid/tid as int64 (absent: 0), or a string's code in o->idstrs (*k = 1); BAIL for an int beyond 18 digits. */
static int field_id(S *s, Out *o, unsigned seen, unsigned bit, int t, const Num *n, const Str *x, int64_t *v,
                    int8_t *k) {
    *k = 0;
    if (!(seen & bit)) {
        *v = 0;
        return OK;
    }
    if (t == T_STR) {
        const char *d;
        size_t len;
        int r = decode_str(s, x, &d, &len);
        if (r) return r;
        int32_t c = intern(&o->idstrs, d, len);
        if (c < 0) return NOMEM;
        *v = c;
        *k = 1;
        return OK;
    }
    return num_int64(n, v);
}

static int field_str(S *s, Intern *t, unsigned seen, unsigned bit, const Str *x, int32_t *code) {
    const char *d = "";
    size_t n = 0;
    if (seen & bit) {
        int r = decode_str(s, x, &d, &n);
        if (r) return r;
    }
    *code = intern(t, d, n);
    return *code < 0 ? NOMEM : OK;
}

static int field_double(unsigned seen, unsigned bit, const Num *n, double *v) {
    *v = (seen & bit) ? n->d : 0.0; /* (converted by number_value) */
    return OK;
}

static int add_event(S *s, Out *o, Fields *f, cp ev_a, cp ev_e, cp base) {
    int8_t code = (f->seen & F_PH) ? (int8_t)ph_code(&f->ph) : 0;
    if (PUT(&o->ph, code)) return NOMEM;
    int r;
    if (code >= 1 && code <= 3) {
        double ts, dur;
        int64_t pid, tid, a, e;
        int32_t cat, name;
        int8_t pk, tk;
        if (field_double(f->seen, F_TS, &f->ts, &ts) || field_double(f->seen, F_DUR, &f->dur, &dur)) return BAIL;
        if ((r = field_id(s, o, f->seen, F_PID, f->pid_t, &f->pid, &f->pid_s, &pid, &pk))) return r;
        if ((r = field_id(s, o, f->seen, F_TID, f->tid_t, &f->tid, &f->tid_s, &tid, &tk))) return r;
        if (PUT(&o->pidk, pk) || PUT(&o->tidk, tk)) return NOMEM;
        if ((r = field_str(s, &o->cats, f->seen, F_CAT, &f->cat, &cat))) return r;
        if ((r = field_str(s, &o->names, f->seen, F_NAME, &f->name, &name))) return r;
        /* (a string's key: INT64_MIN + its code, below any int of at most 18 digits) */
        int32_t pc = ints_code(&o->pidu, pk ? INT64_MIN + pid : pid), tc = ints_code(&o->tidu, tk ? INT64_MIN + tid : tid);
        if (pc < 0 || tc < 0) return NOMEM;
        if (pc >= (1 << 21) || tc >= (1 << 21) || cat >= (1 << 21)) return BAIL; /* (millions of threads) */
        int32_t cc = ints_code(&o->combos, ((int64_t)cat << 42) | ((int64_t)pc << 21) | tc);
        if (cc < 0) return NOMEM;
        /* the link ids as link_ids.piece_links gives them: External id, else external id, else NO_ID; the
         * correlation, else NO_ID (an event left to the Python path, `lrest`, is decided there) */
        int64_t ext = f->ext != ABSENT ? f->ext : f->legacy, corr = f->corr;
        if (ext == ABSENT) ext = NO_ID;
        if (corr == ABSENT) corr = NO_ID;
        if (PUT(&o->combo, cc) || PUT(&o->ext, ext) || PUT(&o->legacy, f->legacy) || PUT(&o->corr, corr) ||
            PUT(&o->lrest, f->lrest))
            return NOMEM;
        if (!o->copy) { /* the args' own range of the piece (none: an empty range) */
            a = e = (f->seen & F_ARGS) ? (int64_t)(f->args_a - base) : 0;
            if (f->seen & F_ARGS) e = (int64_t)(f->args_e - base);
        } else {
            a = (int64_t)o->blob.len;
            if (f->seen & F_ARGS) { /* the blob is the bytes object the result holds, sized to the piece (args are
                                         disjoint ranges of it, so they always fit: checked all the same) */
                size_t len = (size_t)(f->args_e - f->args_a);
                if (len > o->blob.cap - o->blob.len) return BAIL;
                memcpy(o->blob.p + o->blob.len, f->args_a, len);
                o->blob.len += len;
            }
            e = (int64_t)o->blob.len;
        }
        if (PUT(&o->ts, ts) || PUT(&o->dur, dur) || PUT(&o->pid, pid) || PUT(&o->tid, tid) || PUT(&o->cat, cat) ||
            PUT(&o->name, name) || PUT(&o->astart, a) || PUT(&o->aend, e))
            return NOMEM;
    } else if (code >= 4 && code <= 6) {
        int64_t a = ev_a - base, e = ev_e - base;
        if (PUT(&o->ostart, a) || PUT(&o->oend, e)) return NOMEM;
    } else if (code == 7 || code == 8) {
        double ts;
        int64_t pid, tid, id = NO_ID;
        int32_t cat;
        int8_t pk, tk;
        if (field_double(f->seen, F_TS, &f->ts, &ts)) return BAIL;
        if ((r = field_id(s, o, f->seen, F_PID, f->pid_t, &f->pid, &f->pid_s, &pid, &pk))) return r;
        if ((r = field_id(s, o, f->seen, F_TID, f->tid_t, &f->tid, &f->tid_s, &tid, &tk))) return r;
        if (PUT(&o->fpidk, pk) || PUT(&o->ftidk, tk)) return NOMEM;
        if ((f->seen & F_ID) && f->id_t != T_NULL) {
            if (f->id_t != T_INT || num_int64(&f->id, &id)) return BAIL;
        }
        if ((r = field_str(s, &o->fcats, f->seen, F_CAT, &f->cat, &cat))) return r;
        if (PUT(&o->fts, ts) || PUT(&o->fpid, pid) || PUT(&o->ftid, tid) || PUT(&o->fid, id) || PUT(&o->fcat, cat))
            return NOMEM;
    }
    return OK;
}

static void out_free(Out *o) {
    Buf *bufs[] = {&o->ph, &o->ts, &o->dur, &o->pid, &o->tid, &o->cat, &o->name, &o->astart, &o->aend,
                   &o->ostart, &o->oend, &o->fts, &o->fpid, &o->ftid, &o->fid, &o->fcat,
                   &o->pidk, &o->tidk, &o->fpidk, &o->ftidk, &o->combo, &o->ext, &o->legacy,
                   &o->corr, &o->lrest};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) buf_free(bufs[i]);
    intern_free(&o->cats);
    intern_free(&o->names);
    intern_free(&o->fcats);
    intern_free(&o->idstrs);
    ints_free(&o->pidu);
    ints_free(&o->tidu);
    ints_free(&o->combos);
}

/* Room for the events a piece of `len` bytes may hold (Kineto events take 100-300 bytes; columns still grow
 * past this when they need to): no realloc copies of the columns as they fill. Only what is written is touched. */
static int reserve_columns(Out *o, size_t len) {
    size_t n = len / 80 + 16;
    Buf *b8[] = {&o->ts, &o->dur, &o->pid, &o->tid, &o->astart, &o->aend, &o->ext, &o->legacy, &o->corr};
    Buf *b4[] = {&o->cat, &o->name, &o->combo};
    Buf *b1[] = {&o->ph, &o->pidk, &o->tidk, &o->lrest};
    for (size_t i = 0; i < sizeof(b8) / sizeof(b8[0]); i++)
        if (buf_reserve(b8[i], 8 * n)) return -1;
    for (size_t i = 0; i < sizeof(b4) / sizeof(b4[0]); i++)
        if (buf_reserve(b4[i], 4 * n)) return -1;
    for (size_t i = 0; i < sizeof(b1) / sizeof(b1[0]); i++)
        if (buf_reserve(b1[i], n)) return -1;
    return 0;
}

static int scan_piece(S *s, Out *o, Py_ssize_t *count) {
    cp base = s->p;
    Py_ssize_t n = 0;
    skip_ws(s);
    if (s->p >= s->end) {
        *count = 0;
        return OK;
    }
    for (;;) {
        if (*s->p != '{') return BAIL; /* an element that is not an object: msgspec's ValidationError */
        cp a = s->p;
        Fields f;
        int r = scan_event(s, &f);
        if (r) return r;
        if ((r = add_event(s, o, &f, a, s->p, base))) return r;
        n++;
        skip_ws(s);
        if (s->p >= s->end) break;
        if (*s->p != ',') return BAIL;
        s->p++;
        skip_ws(s);
        if (s->p >= s->end) return BAIL; /* a trailing comma */
    }
    *count = n;
    return OK;
}

/* A column handed to Python without a copy: it owns the buffer the scan wrote (freed when the last array made
 * from it goes) and gives it through the buffer protocol (np.frombuffer), writable, with len() in bytes. Copying
 * each column into a bytearray cost as much page faulting as writing it (measured: ~13% of a load's faults). */
typedef struct {
    PyObject_HEAD
    char *p;
    Py_ssize_t len;
} Column;

static char empty_column[1];

static int column_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Column *c = (Column *)self;
    return PyBuffer_FillInfo(view, self, c->p ? c->p : empty_column, c->len, 0, flags);
}

static void column_dealloc(PyObject *self) {
    free(((Column *)self)->p);
    Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t column_length(PyObject *self) { return ((Column *)self)->len; }

static PyBufferProcs column_as_buffer = {column_getbuffer, NULL};
static PySequenceMethods column_as_sequence = {column_length};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trntui.loaders.kineto._scan.Column",
    .tp_basicsize = sizeof(Column),
    .tp_dealloc = column_dealloc,
    .tp_as_sequence = &column_as_sequence,
    .tp_as_buffer = &column_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A column the scan wrote (its bytes through the buffer protocol).",
};

/* The Buf as a Column (it takes the Buf's memory, shrunk to its length; the Buf is left empty). */
static PyObject *bytearray_of(Buf *b) {
    Column *c = PyObject_New(Column, &ColumnType);
    if (!c) return NULL;
    c->p = NULL;
    c->len = (Py_ssize_t)b->len;
    if (b->len) {
        char *q = b->cap - b->len > (64 << 10) ? realloc(b->p, b->len) : NULL; /* (shrinking: no copy) */
        c->p = q ? q : b->p;
    } else {
        free(b->p);
    }
    b->p = NULL;
    b->len = b->cap = 0;
    return (PyObject *)c;
}

PyDoc_STRVAR(scan_doc,
             "scan(piece, copy=True) -> tuple | None\n\n"
             "The columns of a piece of a Kineto event array (events separated by commas, no brackets), or None\n"
             "when the piece needs the Python path (compiled.py documents the tuple). copy: the args bytes are\n"
             "copied into one blob (the offsets point into it); else the blob is None and the offsets are the\n"
             "args' ranges of the piece itself.");

static PyObject *DataVanished; /* an OSError: the mapped data being read vanished (the guard) */

typedef struct {
    S *s;
    Out *o;
    Py_ssize_t *n;
} ScanCall;

static int scan_call(void *arg) {
    ScanCall *c = (ScanCall *)arg;
    return scan_piece(c->s, c->o, c->n);
}

static Py_ssize_t last_bail = -1; /* where the last `scan` that returned None stopped (tests, diagnosis) */

static PyObject *bail_at(PyObject *self, PyObject *unused) { return PyLong_FromSsize_t(last_bail); }

static PyObject *scan(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"piece", "copy", NULL};
    Py_buffer view;
    int copy = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|p:scan", kwlist, &view, &copy)) return NULL;
    S s = {0};
    s.p = view.buf;
    s.end = (cp)view.buf + view.len;
    Out o;
    memset(&o, 0, sizeof(o));
    o.copy = copy;
    PyObject *blob = copy ? PyBytes_FromStringAndSize(NULL, view.len) : Py_NewRef(Py_None);
    if (!blob) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (copy) {
        o.blob.p = PyBytes_AS_STRING(blob);
        o.blob.cap = (size_t)view.len;
    }
    Py_ssize_t n = 0;
    int r = NOMEM;
    ScanCall call = {&s, &o, &n};
#ifdef GUARD
    guard_install();
#endif
    Py_BEGIN_ALLOW_THREADS
    if (reserve_columns(&o, (size_t)view.len) == 0) r = guarded(view.buf, view.len, scan_call, &call);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (r == NOMEM) {
        PyErr_NoMemory();
    } else if (r == VANISHED) {
        PyErr_SetString(DataVanished, "the data vanished while it was read (its file was truncated)");
    } else if (r == BAIL) {
        last_bail = (Py_ssize_t)(s.p - (cp)view.buf);
        result = Py_NewRef(Py_None);
    } else {
        PyObject *cats = intern_list(&o.cats), *names = cats ? intern_list(&o.names) : NULL;
        PyObject *fcats = names ? intern_list(&o.fcats) : NULL;
        PyObject *ids = fcats ? intern_list(&o.idstrs) : NULL;
        if (ids && (!copy || _PyBytes_Resize(&blob, (Py_ssize_t)o.blob.len) == 0)) {
            PyObject *blob_out = blob;
            blob = NULL; /* (the tuple takes it) */
            result = Py_BuildValue(
                "(nNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN)", n, bytearray_of(&o.ph), bytearray_of(&o.ts), bytearray_of(&o.dur),
                bytearray_of(&o.pid), bytearray_of(&o.tid), bytearray_of(&o.cat), bytearray_of(&o.name),
                bytearray_of(&o.astart), bytearray_of(&o.aend),
                blob_out, cats, names,
                bytearray_of(&o.ostart), bytearray_of(&o.oend), bytearray_of(&o.fts), bytearray_of(&o.fpid),
                bytearray_of(&o.ftid), bytearray_of(&o.fid), bytearray_of(&o.fcat), fcats, bytearray_of(&o.pidk),
                bytearray_of(&o.tidk), bytearray_of(&o.fpidk), bytearray_of(&o.ftidk), ids, bytearray_of(&o.combo),
                bytearray_of(&o.combos.values), bytearray_of(&o.pidu.values), bytearray_of(&o.tidu.values), bytearray_of(&o.ext),
                bytearray_of(&o.legacy), bytearray_of(&o.corr), bytearray_of(&o.lrest));
        } else {
            Py_XDECREF(cats);
            Py_XDECREF(names);
            Py_XDECREF(fcats);
            Py_XDECREF(ids);
        }
    }
    Py_XDECREF(blob); /* (NULL once the result holds it, or when a failed resize freed it) */
    out_free(&o);
    buf_free(&s.scratch);
    PyBuffer_Release(&view);
    return result;
}

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

PyDoc_STRVAR(boundary_doc,
             "boundary(data, pos) -> (start, end) | None\n\n"
             "The first candidate event boundary at or after `pos`: what `re.search(rb'\\}\\s*,\\s*\\{', data, pos)` finds,\n"
             "as (match start, match end); None when there is none. Read under the SIGBUS guard (DataVanished).");

typedef struct {
    cp b, end;
    Py_ssize_t pos, a, e;
} BoundaryCall;

static int boundary_call(void *arg) {
    BoundaryCall *c = (BoundaryCall *)arg;
    cp b = c->b, end = c->end, p = c->pos < end - b ? b + c->pos : end;
    while (p < end && (p = memchr(p, '}', (size_t)(end - p))) != NULL) {
        cp q = p + 1;
        while (q < end && is_space(*q)) q++;
        if (q < end && *q == ',') {
            q++;
            while (q < end && is_space(*q)) q++;
            if (q < end && *q == '{') {
                c->a = p - b;
                c->e = q + 1 - b;
                return OK;
            }
        }
        p++;
    }
    return OK;
}

static PyObject *boundary(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "y*n:boundary", &view, &pos)) return NULL;
    BoundaryCall call = {(cp)view.buf, (cp)view.buf + view.len, pos < 0 ? 0 : pos, -1, -1};
    int r;
#ifdef GUARD
    guard_install();
#endif
    Py_BEGIN_ALLOW_THREADS
    r = guarded(view.buf, view.len, boundary_call, &call);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (r == VANISHED) {
        PyErr_SetString(DataVanished, "the data vanished while it was read (its file was truncated)");
        return NULL;
    }
    if (call.a < 0) Py_RETURN_NONE;
    return Py_BuildValue("(nn)", call.a, call.e);
}

static PyMethodDef methods[] = {
    {"boundary", boundary, METH_VARARGS, boundary_doc},
    {"scan", (PyCFunction)(void (*)(void))scan, METH_VARARGS | METH_KEYWORDS, scan_doc},
    {"bail_at", bail_at, METH_NOARGS, "Where the last scan that returned None stopped (a byte offset; -1: none)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "The compiled Kineto column builder.", -1, methods};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&ColumnType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    DataVanished = PyErr_NewExceptionWithDoc(
        "trntui.loaders.kineto._scan.DataVanished",
        "A memory-mapped piece being scanned vanished (its file was truncated while it was read).", PyExc_OSError,
        NULL);
    if (!DataVanished || PyModule_AddObjectRef(m, "DataVanished", DataVanished) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
