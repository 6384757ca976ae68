/* A small strict reader for the flat JSON header RocketMQ clients write (RemotingCommand's
 * fastjson form): one object of scalars plus the "extFields" object of string values.
 *
 * It only has to say "yes, and here are the values" for headers orjson reads the same way, and
 * "no" for everything else: a "no" sends the frame to the Python path, which parses it with
 * orjson / jsonutil as before. So it accepts a strict subset of JSON (RFC 8259): no duplicate
 * keys we look at (orjson keeps the last, we would need to agree), integers of at most 18 digits
 * (orjson turns longer ones into floats), no nested containers in values we skip, no lone
 * surrogate escapes (orjson rejects them), UTF-8 validated for the whole header up front
 * (orjson rejects invalid UTF-8 anywhere, even in values nobody reads).
 *
 * Pure C, no Python objects: bytes in, views out. Decoded strings without escapes point into
 * the frame; strings with escapes are decoded into a caller-provided arena at least as long as
 * the header (an escape never decodes to more bytes than it occupies).
 */
#ifndef RMQ_SEND_JSON_H
#define RMQ_SEND_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const unsigned char *p; /* NULL: absent */
    size_t n;
} sv_t;

/* Integer field: present flag and value. */
typedef struct {
    int present;
    int is_int; /* 0: present but not a plain integer (decline) */
    int64_t v;
} iv_t;

#define EXT_LETTERS 13 /* a..m: the SendMessageRequestHeaderV2 letters plain_v2_record reads */

typedef struct {
    iv_t code, flag, opaque, version;
    int has_language, language_is_str;
    sv_t language;
    int has_ext;
    sv_t ext[EXT_LETTERS];
    int ext_is_str[EXT_LETTERS]; /* the letter's value is a JSON string */
    int has_client_id;
} hdr_t;

typedef struct {
    const unsigned char *s, *end;
    unsigned char *arena; /* decoded strings with escapes go here */
} jp_t;

/* --- UTF-8 validation (RFC 3629: no overlongs, no surrogates, max U+10FFFF) -------------- */
static int utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path: 8 bytes at a time (memcpy: no unaligned access UB). */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL) break;
            i += 8;
        }
        if (i >= n) break;
        unsigned c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n) return 0;
            unsigned c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && c1 < 0xA0) return 0; /* overlong */
            if (c == 0xED && c1 >= 0xA0) return 0; /* surrogate */
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n) return 0;
            unsigned c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if (c == 0xF0 && c1 < 0x90) return 0; /* overlong */
            if (c == 0xF4 && c1 >= 0x90) return 0; /* > U+10FFFF */
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* 1 for the bytes that end a run of plain string characters: '"', '\\' and the control
 * characters JSON forbids raw (one table load per byte instead of three comparisons). */
static const unsigned char STR_STOP[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
};

/* Eight bytes at a time (SWAR: one uint64_t per step, loaded with memcpy so alignment does not
 * matter), the table for the last < 8 bytes of the input. str_stop_mask(w) has the high bit set
 * in each byte of w that STR_STOP marks, by the classic bit tricks "has a byte less than 0x20"
 * ((w - 0x20..) & ~w) and "has a zero byte" ((x - 0x01..) & ~x) on x = w ^ '"'.. and
 * w ^ '\\'..: the mask is nonzero exactly when a marked byte is among the eight. A subtraction
 * borrows towards the more significant bytes only, so bits may be spurious above the
 * numerically lowest marked byte, never below it. Bytes >= 0x80 are never marked (UTF-8 is
 * validated up front for the whole header). */
#define SWAR_ONES 0x0101010101010101ULL
#define SWAR_HIGH 0x8080808080808080ULL

static inline uint64_t str_stop_mask(uint64_t w) {
    uint64_t q = w ^ (SWAR_ONES * '"'), b = w ^ (SWAR_ONES * '\\');
    return (((w - SWAR_ONES * 0x20) & ~w) | ((q - SWAR_ONES) & ~q) | ((b - SWAR_ONES) & ~b))
           & SWAR_HIGH;
}

/* Index of the first marked byte of the eight at p, given their nonzero mask m. Little-endian:
 * memory order is significance order, so the first set high bit is exact; it is found by a
 * chain of tests rather than a count of trailing zeros, because the branches are predicted
 * (a header's strings come in the same lengths frame after frame) and the next string's
 * address then does not wait for the mask. Elsewhere spurious bits could come first: the table
 * decides. */
static inline size_t str_first(uint64_t m, const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    (void)p;
    if (m & 0x80ULL) return 0;
    if (m & 0x8000ULL) return 1;
    if (m & 0x800000ULL) return 2;
    if (m & 0x80000000ULL) return 3;
    if (m & 0x8000000000ULL) return 4;
    if (m & 0x800000000000ULL) return 5;
    if (m & 0x80000000000000ULL) return 6;
    return 7;
#else
    (void)m;
    size_t k = 0;
    while (!STR_STOP[p[k]]) k++;
    return k;
#endif
}

/* First byte in [p, end) that STR_STOP marks, or end. */
static inline const unsigned char *str_run(const unsigned char *p, const unsigned char *end) {
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t m = str_stop_mask(w);
        if (m) return p + str_first(m, p);
        p += 8;
    }
    while (p < end && !STR_STOP[*p]) p++;
    return p;
}

/* str_run that also copies the run to *dp (advanced past it): each word read is stored whole
 * before it is checked, so up to 7 bytes past the run are written too. The arena has room for
 * them: what a header's strings decode to so far never outruns what they occupy in it
 * (d - arena <= p - header start; an escape decodes to fewer bytes than it is written with),
 * so with 8 bytes of input left d + 8 stays within the header's length, the arena's least. */
static inline const unsigned char *str_copy_run(const unsigned char *p, const unsigned char *end,
                                                unsigned char **dp) {
    unsigned char *d = *dp;
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        memcpy(d, &w, 8);
        uint64_t m = str_stop_mask(w);
        if (m) {
            size_t k = str_first(m, p);
            *dp = d + k;
            return p + k;
        }
        p += 8;
        d += 8;
    }
    while (p < end && !STR_STOP[*p]) *d++ = *p++;
    *dp = d;
    return p;
}

static inline void jp_ws(jp_t *j) {
    while (j->s < j->end && (*j->s == ' ' || *j->s == '\t' || *j->s == '\n' || *j->s == '\r'))
        j->s++;
}

static inline int hexval(unsigned c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

static int read_hex4(const unsigned char *p, const unsigned char *end, unsigned *out) {
    if (end - p < 4) return 0;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p[k]);
        if (h < 0) return 0;
        v = (v << 4) | (unsigned)h;
    }
    *out = v;
    return 1;
}

/* The rest of a string with escapes, p at its first backslash ([j->s, p) plain): decoded into
 * the arena; jp_string's contract. Out of line: most strings have no escape, and jp_string,
 * left with the test for them, is small enough to be inlined where strings are read. */
static __attribute__((noinline)) int jp_string_escaped(jp_t *j, const unsigned char *p,
                                                        sv_t *out) {
    /* Escapes: copy the plain prefix, then decode into the arena. */
    unsigned char *dst = j->arena, *d = dst;
    size_t pre = (size_t)(p - j->s);
    memcpy(d, j->s, pre);
    d += pre;
    while (p < j->end) {
        unsigned c = *p;
        if (c == '"') {
            out->p = dst;
            out->n = (size_t)(d - dst);
            j->arena = d;
            j->s = p + 1;
            return 1;
        }
        if (c < 0x20) return 0;
        if (c != '\\') {
            /* A run of plain characters up to the next escape, quote or control byte. */
            p = str_copy_run(p, j->end, &d);
            continue;
        }
        if (p + 1 >= j->end) return 0;
        unsigned e = p[1];
        p += 2;
        switch (e) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '/': *d++ = '/'; break;
        case 'b': *d++ = '\b'; break;
        case 'f': *d++ = '\f'; break;
        case 'n': *d++ = '\n'; break;
        case 'r': *d++ = '\r'; break;
        case 't': *d++ = '\t'; break;
        case 'u': {
            /* \u00XX, the form writers give control characters (RocketMQ's properties are
             * \u0001 / \u0002 separated): two hex digits, no surrogate, one or two bytes. */
            if (j->end - p >= 4 && p[0] == '0' && p[1] == '0') {
                int h = hexval(p[2]), l = hexval(p[3]);
                if (h < 0 || l < 0) return 0;
                unsigned cp = (unsigned)(h << 4 | l);
                p += 4;
                if (cp < 0x80) {
                    *d++ = (unsigned char)cp;
                } else {
                    *d++ = (unsigned char)(0xC0 | (cp >> 6));
                    *d++ = (unsigned char)(0x80 | (cp & 0x3F));
                }
                break;
            }
            unsigned cp;
            if (!read_hex4(p, j->end, &cp)) return 0;
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                /* A high surrogate must be followed by \u + low surrogate (orjson: error). */
                unsigned lo;
                if (j->end - p < 6 || p[0] != '\\' || p[1] != 'u' || !read_hex4(p + 2, j->end, &lo)
                    || lo < 0xDC00 || lo > 0xDFFF)
                    return 0;
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return 0;
            }
            if (cp < 0x80) {
                *d++ = (unsigned char)cp;
            } else if (cp < 0x800) {
                *d++ = (unsigned char)(0xC0 | (cp >> 6));
                *d++ = (unsigned char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *d++ = (unsigned char)(0xE0 | (cp >> 12));
                *d++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                *d++ = (unsigned char)(0x80 | (cp & 0x3F));
            } else {
                *d++ = (unsigned char)(0xF0 | (cp >> 18));
                *d++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                *d++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                *d++ = (unsigned char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            return 0;
        }
    }
    return 0;
}

/* A JSON string at j->s (which must be '"'). On success *out views the decoded UTF-8 (into the
 * frame if it has no escape, else into the arena) and 1 is returned; 0: not one we accept.
 * Inlined where strings are read (GCC would not on its own): a header is some 30 short
 * strings, and a call each cost more than their scan. */
static inline __attribute__((always_inline)) int jp_string(jp_t *j, sv_t *out) {
    if (j->s >= j->end || *j->s != '"') return 0;
    const unsigned char *p = str_run(++j->s, j->end);
    /* No escape -> zero-copy view. Raw control characters are invalid JSON. */
    if (p >= j->end || *p < 0x20) return 0;
    if (*p == '"') {
        out->p = j->s;
        out->n = (size_t)(p - j->s);
        j->s = p + 1;
        return 1;
    }
    return jp_string_escaped(j, p, out);
}

/* A JSON number at j->s. *is_int = 1 and *v set for an integer of at most 18 digits (orjson
 * reads it as that int); any other valid number sets *is_int = 0. Returns 0 if not a valid
 * JSON number. */
static int jp_number(jp_t *j, int *is_int, int64_t *v) {
    const unsigned char *p = j->s, *end = j->end;
    int neg = 0;
    if (p < end && *p == '-') { neg = 1; p++; }
    if (p >= end || *p < '0' || *p > '9') return 0;
    const unsigned char *digits = p;
    if (*p == '0') {
        p++;
    } else {
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    size_t nd = (size_t)(p - digits);
    int integer = 1;
    if (p < end && *p == '.') {
        integer = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return 0;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        integer = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return 0;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    j->s = p;
    if (!integer || nd > 18) { *is_int = 0; return 1; }
    int64_t x = 0;
    for (size_t k = 0; k < nd; k++) x = x * 10 + (digits[k] - '0');
    *is_int = 1;
    *v = neg ? -x : x;
    return 1;
}

static int jp_literal(jp_t *j, const char *lit, size_t n) {
    if ((size_t)(j->end - j->s) < n || memcmp(j->s, lit, n) != 0) return 0;
    j->s += n;
    return 1;
}

/* Skip a scalar value (string, number, true, false, null) we do not read. Containers: 0. */
static int jp_skip_scalar(jp_t *j) {
    if (j->s >= j->end) return 0;
    unsigned c = *j->s;
    if (c == '"') { sv_t tmp; return jp_string(j, &tmp); }
    if (c == '-' || (c >= '0' && c <= '9')) { int ii; int64_t vv; return jp_number(j, &ii, &vv); }
    if (c == 't') return jp_literal(j, "true", 4);
    if (c == 'f') return jp_literal(j, "false", 5);
    if (c == 'n') return jp_literal(j, "null", 4);
    return 0;
}

/* An integer-valued top-level field: any scalar is accepted by the grammar; only a plain
 * integer is usable (is_int). */
static int jp_int_field(jp_t *j, iv_t *f) {
    if (f->present) return 0; /* duplicate key */
    f->present = 1;
    f->is_int = 0;
    if (j->s < j->end && (*j->s == '-' || (*j->s >= '0' && *j->s <= '9')))
        return jp_number(j, &f->is_int, &f->v);
    return jp_skip_scalar(j);
}

static int sv_eq(sv_t s, const char *lit) {
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static int jp_ext(jp_t *j, hdr_t *h) {
    if (h->has_ext) return 0;
    h->has_ext = 1;
    if (j->s >= j->end || *j->s != '{') return 0; /* null / other: the Python path declines */
    j->s++;
    jp_ws(j);
    if (j->s < j->end && *j->s == '}') { j->s++; return 1; }
    for (;;) {
        sv_t key;
        jp_ws(j);
        if (!jp_string(j, &key)) return 0;
        jp_ws(j);
        if (j->s >= j->end || *j->s != ':') return 0;
        j->s++;
        jp_ws(j);
        if (key.n == 1 && key.p[0] >= 'a' && key.p[0] < 'a' + EXT_LETTERS) {
            int k = key.p[0] - 'a';
            if (h->ext_is_str[k]) return 0; /* duplicate key: orjson keeps the last */
            if (j->s < j->end && *j->s == '"') {
                if (!jp_string(j, &h->ext[k])) return 0;
                h->ext_is_str[k] = 1;
            } else {
                /* A non-string value for a letter we read: the Python path declines it. */
                return 0;
            }
        } else {
            if (sv_eq(key, "clientID")) h->has_client_id = 1;
            if (!jp_skip_scalar(j)) return 0;
        }
        jp_ws(j);
        if (j->s >= j->end) return 0;
        if (*j->s == ',') { j->s++; continue; }
        if (*j->s == '}') { j->s++; return 1; }
        return 0;
    }
}

/* Parse a whole header [s, end). Returns 1 if it is a JSON object we read exactly as orjson
 * does, with every field of interest in a form we understand; 0 otherwise. ``arena`` must hold
 * at least end - s bytes. Kept out of line (noinline), as it was when its two callers, the
 * frame loop and the parse_header test hook, shared one file: compiled into send_frame.c with
 * a single caller, GCC would otherwise inline it into Sender_run. */
static __attribute__((noinline)) int
parse_header(const unsigned char *s, const unsigned char *end, unsigned char *arena, hdr_t *h) {
    memset(h, 0, sizeof(*h));
    if (!utf8_valid(s, (size_t)(end - s))) return 0;
    jp_t j = {s, end, arena};
    jp_ws(&j);
    if (j.s >= j.end || *j.s != '{') return 0;
    j.s++;
    jp_ws(&j);
    if (j.s < j.end && *j.s == '}') return 0; /* no code */
    for (;;) {
        sv_t key;
        jp_ws(&j);
        if (!jp_string(&j, &key)) return 0;
        jp_ws(&j);
        if (j.s >= j.end || *j.s != ':') return 0;
        j.s++;
        jp_ws(&j);
        int ok;
        if (sv_eq(key, "code")) ok = jp_int_field(&j, &h->code);
        else if (sv_eq(key, "flag")) ok = jp_int_field(&j, &h->flag);
        else if (sv_eq(key, "opaque")) ok = jp_int_field(&j, &h->opaque);
        else if (sv_eq(key, "version")) ok = jp_int_field(&j, &h->version);
        else if (sv_eq(key, "extFields")) ok = jp_ext(&j, h);
        else if (sv_eq(key, "language")) {
            if (h->has_language) return 0;
            h->has_language = 1;
            if (j.s < j.end && *j.s == '"') {
                ok = jp_string(&j, &h->language);
                h->language_is_str = 1;
            } else {
                ok = jp_skip_scalar(&j);
            }
        } else ok = jp_skip_scalar(&j);
        if (!ok) return 0;
        jp_ws(&j);
        if (j.s >= j.end) return 0;
        if (*j.s == ',') { j.s++; continue; }
        if (*j.s == '}') { j.s++; break; }
        return 0;
    }
    jp_ws(&j);
    return j.s == j.end; /* trailing bytes: orjson refuses the document */
}

#endif
