/* Compiled array kernels of the model (optional: each has a numpy fallback that gives identical results, used
 * where this extension is not built; trntui/model/kernels.py picks one).
 *
 * stack_parents(new_thread, end, out): torch's containment stack in one pass. Events are in (thread, start,
 * -end) order; new_thread[i] != 0 where a thread's events begin; out[i] = the nearest earlier event j of the same
 * thread with end[j] >= end[i] (end[j] > end[i] for a zero-length event i, whose start is its end), else -1.
 * A stack of the candidates, ends decreasing: an entry that ends too early for event i ends too early for every
 * later event as well (i itself qualifies wherever it would, and is nearer), so it is popped for good. O(n).
 * Buffers: new_thread uint8, end int64, out int64 (writable), all of one length; `start` is not needed.
 *
 * gather_ranges(src_fd, starts, ends, dst_fd): the bytes [starts[k], ends[k]) of the file `src_fd`, for k in
 * order (ranges sorted by start, each non-empty), written one after the other to `dst_fd` at its position; returns
 * how many. Read with pread a window at a time, gathered into an output buffer, written with write: what
 * model/args.py `ArgsStore.write_packed` does with writev from Python, without a Python object per range. A
 * range the file no longer holds (it shrank) raises EOFError; a failed read or write, OSError. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <unistd.h>
#define HAVE_GATHER 1
#endif

static PyObject *stack_parents(PyObject *self, PyObject *args) {
    PyObject *a_new, *a_start, *a_end, *a_out;
    if (!PyArg_ParseTuple(args, "OOOO", &a_new, &a_start, &a_end, &a_out)) return NULL;
    Py_buffer bn, bs, be, bo;
    if (PyObject_GetBuffer(a_new, &bn, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(a_start, &bs, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&bn);
        return NULL;
    }
    if (PyObject_GetBuffer(a_end, &be, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&bn);
        PyBuffer_Release(&bs);
        return NULL;
    }
    if (PyObject_GetBuffer(a_out, &bo, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&bn);
        PyBuffer_Release(&bs);
        PyBuffer_Release(&be);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t m = bn.len;
    if (bs.len != m * 8 || be.len != m * 8 || bo.len != m * 8) {
        PyErr_SetString(PyExc_ValueError, "stack_parents: buffers of different lengths");
        goto done;
    }
    int64_t *stack = (int64_t *)malloc((size_t)(m > 0 ? m : 1) * sizeof(int64_t));
    if (!stack) {
        PyErr_NoMemory();
        goto done;
    }
    const uint8_t *nt = (const uint8_t *)bn.buf;
    const int64_t *s = (const int64_t *)bs.buf, *e = (const int64_t *)be.buf;
    int64_t *out = (int64_t *)bo.buf;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t top = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (nt[i]) top = 0;
        /* the end a parent must reach: ours, one more for a zero-length event (wrapping as numpy's int64 does) */
        int64_t need = e[i] == s[i] ? (int64_t)((uint64_t)e[i] + 1u) : e[i];
        while (top > 0 && e[stack[top - 1]] < need) top--;
        out[i] = top > 0 ? stack[top - 1] : -1;
        stack[top++] = (int64_t)i;
    }
    Py_END_ALLOW_THREADS
    free(stack);
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&bn);
    PyBuffer_Release(&bs);
    PyBuffer_Release(&be);
    PyBuffer_Release(&bo);
    return result;
}

#ifdef HAVE_GATHER
enum { G_OK = 0, G_ERRNO = 1, G_SHORT = 2, G_NOMEM = 3 };

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return G_ERRNO;
        }
        p += k;
        n -= (size_t)k;
    }
    return G_OK;
}

/* Bytes [a, a + n) of `fd` into `buf` (all of them, else G_SHORT: the file ends before). */
static int read_all(int fd, char *buf, int64_t a, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, buf + got, n - got, (off_t)(a + (int64_t)got));
        if (k < 0) {
            if (errno == EINTR) continue;
            return G_ERRNO;
        }
        if (k == 0) return G_SHORT;
        got += (size_t)k;
    }
    return G_OK;
}

#define G_WINDOW ((size_t)16 << 20)
#define G_OUT ((size_t)4 << 20)

static int gather(int src, const int64_t *s, const int64_t *e, Py_ssize_t m, int dst, int64_t *total) {
    char *win = NULL, *out = (char *)malloc(G_OUT);
    size_t wcap = 0, olen = 0;
    int64_t wbase = 0, wend = 0; /* the window holds the file's bytes [wbase, wend) */
    int r = G_OK;
    *total = 0;
    if (!out) return G_NOMEM;
    for (Py_ssize_t k = 0; k < m && r == G_OK; k++) {
        int64_t a = s[k], b = e[k];
        if (a < 0 || b <= a) continue;
        size_t n = (size_t)(b - a);
        if (!(a >= wbase && b <= wend)) { /* a window from this range's start: at least the range, else 16 MB */
            size_t want = n > G_WINDOW ? n : G_WINDOW;
            /* (the window's end is this range's, or the furthest later range's end within 16 MB) */
            int64_t reach = b;
            for (Py_ssize_t j = k + 1; j < m && e[j] - a <= (int64_t)want; j++)
                if (e[j] > reach) reach = e[j];
            want = (size_t)(reach - a);
            if (want > wcap) {
                char *w = (char *)realloc(win, want);
                if (!w) {
                    r = G_NOMEM;
                    break;
                }
                win = w;
                wcap = want;
            }
            if ((r = read_all(src, win, a, want)) != G_OK) break;
            wbase = a;
            wend = a + (int64_t)want;
        }
        const char *p = win + (a - wbase);
        if (n > G_OUT - olen) { /* no room: what is gathered goes out first */
            if ((r = write_all(dst, out, olen)) != G_OK) break;
            olen = 0;
        }
        if (n > G_OUT) {
            r = write_all(dst, p, n);
        } else {
            memcpy(out + olen, p, n);
            olen += n;
        }
        *total += (int64_t)n;
    }
    if (r == G_OK && olen) r = write_all(dst, out, olen);
    free(out);
    free(win);
    return r;
}

static PyObject *gather_ranges(PyObject *self, PyObject *args) {
    int src, dst;
    Py_buffer bs, be;
    if (!PyArg_ParseTuple(args, "iy*y*i", &src, &bs, &be, &dst)) return NULL;
    PyObject *result = NULL;
    if (bs.len != be.len || bs.len % 8) {
        PyErr_SetString(PyExc_ValueError, "gather_ranges: starts and ends of different lengths");
    } else {
        int64_t total = 0;
        int r;
        Py_BEGIN_ALLOW_THREADS
        r = gather(src, (const int64_t *)bs.buf, (const int64_t *)be.buf, bs.len / 8, dst, &total);
        Py_END_ALLOW_THREADS
        if (r == G_OK)
            result = PyLong_FromLongLong((long long)total);
        else if (r == G_SHORT)
            PyErr_SetString(PyExc_EOFError, "gather_ranges: the file ends before a range");
        else if (r == G_NOMEM)
            PyErr_NoMemory();
        else
            PyErr_SetFromErrno(PyExc_OSError);
    }
    PyBuffer_Release(&bs);
    PyBuffer_Release(&be);
    return result;
}
#endif

static PyMethodDef methods[] = {
    {"stack_parents", stack_parents, METH_VARARGS, "stack_parents(new_thread, start, end, out): see the source."},
#ifdef HAVE_GATHER
    {"gather_ranges", gather_ranges, METH_VARARGS, "gather_ranges(src_fd, starts, ends, dst_fd): see the source."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", "Compiled array kernels of the model.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
