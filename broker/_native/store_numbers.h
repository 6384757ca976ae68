/* Numbers of the put path: big-endian stores into the commitlog / consume-queue formats,
 * Python ints read as bounded C ints, and TAGS's Java hash (the consume queue's tagsCode). */
#ifndef RMQ_EMU_STORE_NUMBERS_H
#define RMQ_EMU_STORE_NUMBERS_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Big-endian stores and loads (the commitlog, consume-queue and index formats are Java's). */

static inline void
put_i16(unsigned char *p, int32_t v)
{
    uint16_t u = __builtin_bswap16((uint16_t)v);
    memcpy(p, &u, 2);
}

static inline void
put_i32(unsigned char *p, int32_t v)
{
    uint32_t u = __builtin_bswap32((uint32_t)v);
    memcpy(p, &u, 4);
}

static inline void
put_i64(unsigned char *p, int64_t v)
{
    uint64_t u = __builtin_bswap64((uint64_t)v);
    memcpy(p, &u, 8);
}

static inline int32_t
get_i32(const unsigned char *p)
{
    uint32_t u;
    memcpy(&u, p, 4);
    return (int32_t)__builtin_bswap32(u);
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "put_i16/32/64 assume a little-endian host"
#endif

/* An int attribute as a C int64 within [lo, hi]; 0 when it is not one (error cleared). */
static inline __attribute__((always_inline)) int
as_i64(PyObject *o, int64_t lo, int64_t hi, int64_t *out)
{
    if (o == NULL || !PyLong_Check(o))
        return 0;
#if PY_VERSION_HEX < 0x030C0000
    /* CPython 3.11's int layout (sign in ob_size, 30-bit digits): most fields of a record
     * fit two digits, read here without the generic conversion. */
    Py_ssize_t nd = Py_SIZE(o);
    if (nd >= -2 && nd <= 2) {
        const digit *d = ((PyLongObject *)o)->ob_digit;
        int64_t v = nd == 0 ? 0 : (int64_t)d[0];
        if (nd == 2 || nd == -2)
            v |= (int64_t)d[1] << PyLong_SHIFT;
        if (nd < 0)
            v = -v;
        if (v < lo || v > hi)
            return 0;
        *out = v;
        return 1;
    }
#endif
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred()) || v < lo || v > hi) {
        PyErr_Clear();
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

#define I32_OK(o, out) as_i64((o), INT32_MIN, INT32_MAX, (out))
#define I64_OK(o, out) as_i64((o), INT64_MIN, INT64_MAX, (out))

/* Java String.hashCode continued from *h over the UTF-16 code units of `s`; 0 when `s`
 * holds a lone surrogate (Python's UTF-16 encode raises: the Python path reports it). */
static __attribute__((unused)) int
java_hash_more(uint32_t *h, PyObject *s)
{
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    uint32_t x = *h;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x10000) {
            if (c >= 0xD800 && c <= 0xDFFF)
                return 0;
            x = 31 * x + c;
        } else {
            c -= 0x10000;
            x = 31 * x + (0xD800 + (c >> 10));
            x = 31 * x + (0xDC00 + (c & 0x3FF));
        }
    }
    *h = x;
    return 1;
}

/* Java String.hashCode continued over ASCII bytes (one UTF-16 code unit each); 0 when a
 * byte is not ASCII. */
static __attribute__((unused)) int
java_hash_ascii(uint32_t *h, const unsigned char *p, Py_ssize_t n)
{
    uint32_t x = *h;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] >= 0x80)
            return 0;
        x = 31 * x + p[i];
    }
    *h = x;
    return 1;
}

/* IndexFile.indexKeyHashMethod's first step: Java's hashCode of "topic#" into *h (0 on a
 * lone surrogate in the topic); the key's code units continue from it. */
static __attribute__((unused)) int
index_hash_prefix(PyObject *topic, uint32_t *h)
{
    uint32_t x = 0;
    if (!java_hash_more(&x, topic))
        return 0;
    *h = 31 * x + '#';
    return 1;
}

/* IndexFile.indexKeyHashMethod's last step on the hashCode of "topic#key": abs, with
 * Integer.MIN_VALUE mapped to 0. */
static inline int32_t
index_hash_finish(uint32_t h)
{
    int32_t v = (int32_t)h;
    return v == INT32_MIN ? 0 : v < 0 ? -v : v;
}

/* Java String.hashCode of `s` (the consume queue's tagsCode); 0 on a lone surrogate. */
static __attribute__((unused)) int
java_hash(PyObject *s, int32_t *out)
{
    uint32_t h = 0;
    if (!java_hash_more(&h, s))
        return 0;
    *out = (int32_t)h;
    return 1;
}

#endif
