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
 * range the file no longer holds (it shrank) raises EOFError; a failed read or write, OSError.
 *
 * times_ns(ts, dur, base, max_ns, start, end, bad): loaders/kineto/columns.py `interval_ns` (dur given) or
 * `flow_ns` (dur None, end None) in one pass, the same double operations in the same order as the numpy code:
 * bad[i] = ts or dur not finite, or |ts*1000 + base| >= max_ns, or |(ts + max(dur, 0))*1000 + base| >= max_ns;
 * a bad event's ts and dur count as 0, a negative dur as 0; start = to_ns(ts) + base, end = start + to_ns(dur),
 * to_ns(v) = int64(floor(v))*1000 + int64(rint((v - floor(v))*1000)), int64 sums wrapping as numpy's do. Returns
 * (events bad, events with a negative dur), or None (nothing written that counts) when a value to convert is
 * beyond int64: the caller then runs the numpy code. Buffers: float64 ts and dur, int64 start and end, uint8 bad.
 * Built without floating-point contraction (setup.py), so `a*b + c` is two roundings, as numpy computes it.
 *
 * bind_flows(time_order, kinds, complete, ev_thread, start, end, threads, fpid, ftid, fts, limit, out): the flow
 * binding of loaders/kineto/flows.py `add_flows` (its numpy loop is the fallback, equal): each flow half's thread
 * key pid << 32 | (tid & 0xFFFFFFFF) (int64, wrapping) looked up in `threads` (the events' distinct keys, sorted);
 * on that thread, among its slices (events of kind `complete`, in `time_order`: by start, longest first), the
 * last one starting at or before the half's ts, then back from it, at most `limit` slices, the first that starts
 * exactly at ts or ends after it: out[i] = its event, else -1 (a half on a thread without slices too). Buffers:
 * int64 time_order, start, end, threads, fpid, ftid, fts (the halves' ts, ns), int8 kinds, ev_thread uint8, uint16
 * or int64 (each event's index among `threads`), int64 out (written wholly).
 *
 * one_sided(fcat, keys, role, start_role, slot_of_cat, lo, n_slots): loaders/kineto/flows.py
 * `_count_one_sided`'s dense case in one pass: each half's (category, key) slot slot_of_cat[fcat] + key - lo, a
 * byte per slot holding the roles seen (1: start_role, 2: any other); returns the slots seen with one role only.
 * The numpy code zeroes, counts and compares the whole table; here only the slots the halves touch are read (the
 * table comes from calloc: pages never touched are never faulted in). Buffers: fcat int16 or int64 (each
 * in [0, len(slot_of_cat))), int64 keys and slot_of_cat, int8 role; a slot outside [0, n_slots) is a ValueError. */

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

#include <math.h>

/* to_ns(v) into *out; 0 when floor(v) is beyond int64 (numpy's cast is then not defined the same way). */
static inline int to_ns(double v, int64_t *out) {
    double whole = floor(v);
    if (!(whole >= -9223372036854775808.0 && whole < 9223372036854775808.0)) return 0;
    uint64_t w = (uint64_t)(int64_t)whole;
    double frac = rint((v - whole) * 1000.0);
    *out = (int64_t)(w * 1000u + (uint64_t)(int64_t)frac);
    return 1;
}

static PyObject *times_ns(PyObject *self, PyObject *args) {
    PyObject *a_ts, *a_dur, *a_start, *a_end, *a_bad;
    long long base;
    double max_ns;
    if (!PyArg_ParseTuple(args, "OOLdOOO", &a_ts, &a_dur, &base, &max_ns, &a_start, &a_end, &a_bad)) return NULL;
    int has_dur = a_dur != Py_None;
    if (has_dur != (a_end != Py_None)) {
        PyErr_SetString(PyExc_ValueError, "times_ns: dur and end go together");
        return NULL;
    }
    Py_buffer bt = {0}, bd = {0}, bs = {0}, be = {0}, bb = {0};
    PyObject *result = NULL;
    if (PyObject_GetBuffer(a_ts, &bt, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (has_dur && PyObject_GetBuffer(a_dur, &bd, PyBUF_C_CONTIGUOUS) < 0) goto done;
    if (PyObject_GetBuffer(a_start, &bs, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) goto done;
    if (has_dur && PyObject_GetBuffer(a_end, &be, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) goto done;
    if (PyObject_GetBuffer(a_bad, &bb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) goto done;
    Py_ssize_t n = bt.len / 8;
    if (bt.len % 8 || bs.len != bt.len || bb.len != n || (has_dur && (bd.len != bt.len || be.len != bt.len))) {
        PyErr_SetString(PyExc_ValueError, "times_ns: buffers of different lengths");
        goto done;
    }
    const double *ts = (const double *)bt.buf, *dur = has_dur ? (const double *)bd.buf : NULL;
    int64_t *start = (int64_t *)bs.buf, *end = has_dur ? (int64_t *)be.buf : NULL;
    uint8_t *bad = (uint8_t *)bb.buf;
    double fbase = (double)base;
    Py_ssize_t n_bad = 0, n_neg = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        double t = ts[i], d = has_dur ? dur[i] : 0.0;
        int b = !isfinite(t) || !isfinite(d) || fabs(t * 1000.0 + fbase) >= max_ns;
        if (has_dur) {
            double dpos = d >= 0.0 ? d : 0.0; /* (np.maximum: d is finite here whenever it matters) */
            b = b || fabs((t + dpos) * 1000.0 + fbase) >= max_ns;
            if (d < 0.0) n_neg++;
        }
        bad[i] = (uint8_t)b;
        n_bad += b;
        if (b) {
            t = 0.0;
            d = 0.0;
        } else if (d < 0.0) {
            d = 0.0;
        }
        int64_t t_ns, d_ns = 0;
        if (!to_ns(t, &t_ns) || (has_dur && !to_ns(d, &d_ns))) {
            ok = 0;
            break;
        }
        uint64_t s0 = (uint64_t)t_ns + (uint64_t)base;
        start[i] = (int64_t)s0;
        if (has_dur) end[i] = (int64_t)(s0 + (uint64_t)d_ns);
    }
    Py_END_ALLOW_THREADS
    if (ok)
        result = Py_BuildValue("nn", n_bad, n_neg);
    else
        result = Py_NewRef(Py_None);
done:
    if (bt.obj) PyBuffer_Release(&bt);
    if (bd.obj) PyBuffer_Release(&bd);
    if (bs.obj) PyBuffer_Release(&bs);
    if (be.obj) PyBuffer_Release(&be);
    if (bb.obj) PyBuffer_Release(&bb);
    return result;
}

static inline int64_t code_at(const void *codes, int width, int64_t i) {
    switch (width) {
    case 1: return ((const uint8_t *)codes)[i];
    case 2: return ((const uint16_t *)codes)[i];
    default: return ((const int64_t *)codes)[i];
    }
}

static PyObject *bind_flows(PyObject *self, PyObject *args) {
    PyObject *objs[10];
    int complete, limit;
    if (!PyArg_ParseTuple(args, "OOiOOOOOOOiO", &objs[0], &objs[1], &complete, &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8], &limit, &objs[9]))
        return NULL;
    /* 0 time_order, 1 kinds, 2 ev_thread, 3 start, 4 end, 5 threads, 6 fpid, 7 ftid, 8 fts, 9 out */
    Py_buffer b[10];
    int got = 0;
    PyObject *result = NULL;
    int64_t *cnt = NULL, *off = NULL, *gs = NULL, *ge = NULL, *go = NULL, *fill = NULL, *last_a = NULL, *last_q = NULL;
    for (; got < 10; got++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got == 9 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[got], &b[got], flags) < 0) goto done;
    }
    Py_ssize_t n = b[3].len / 8, nt = b[5].len / 8, nf = b[9].len / 8, m = b[0].len / 8;
    int width = (int)b[2].itemsize;
    if ((width != 1 && width != 2 && width != 8) || b[2].len != n * width || b[1].len != n || b[4].len != n * 8 ||
        m > n || b[6].len != nf * 8 || b[7].len != nf * 8 || b[8].len != nf * 8 || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "bind_flows: buffers of other lengths or types");
        goto done;
    }
    const int64_t *order = b[0].buf, *start = b[3].buf, *end = b[4].buf, *threads = b[5].buf;
    const int64_t *fpid = b[6].buf, *ftid = b[7].buf, *fts = b[8].buf;
    const int8_t *kinds = b[1].buf;
    const void *evt = b[2].buf;
    int64_t *out = b[9].buf;
    cnt = calloc((size_t)nt + 1, sizeof(int64_t));
    off = calloc((size_t)nt + 2, sizeof(int64_t));
    if (!cnt || !off) {
        PyErr_NoMemory();
        goto done;
    }
    int bad_code = 0;
    int64_t total = 0;
    Py_BEGIN_ALLOW_THREADS
    /* each half's thread (its index among `threads`, -1: none), kept in `out` until it is bound */
    for (Py_ssize_t i = 0; i < nf; i++) {
        int64_t key = (int64_t)(((uint64_t)fpid[i] << 32) + ((uint64_t)ftid[i] & 0xFFFFFFFFu));
        Py_ssize_t lo = 0, hi = nt;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (threads[mid] < key) lo = mid + 1; else hi = mid;
        }
        int64_t t = (lo < nt && threads[lo] == key) ? lo : -1;
        out[i] = t;
        if (t >= 0) cnt[t] = 1; /* (marks the threads with halves: only their slices are gathered) */
    }
    /* the slices of those threads, grouped by thread, in time order within each */
    for (Py_ssize_t j = 0; j < m && !bad_code; j++) {
        int64_t ev = order[j];
        if (ev < 0 || ev >= n) { bad_code = 1; break; }
        if (kinds[ev] != complete) continue;
        int64_t t = code_at(evt, width, ev);
        if (t < 0 || t >= nt) { bad_code = 1; break; }
        if (cnt[t]) off[t + 1]++;
    }
    if (!bad_code) {
        for (Py_ssize_t t = 0; t < nt; t++) off[t + 1] += off[t];
        total = off[nt];
    }
    Py_END_ALLOW_THREADS
    if (bad_code) {
        PyErr_SetString(PyExc_ValueError, "bind_flows: an event index or thread code out of range");
        goto done;
    }
    gs = malloc((size_t)(total > 0 ? total : 1) * sizeof(int64_t));
    ge = malloc((size_t)(total > 0 ? total : 1) * sizeof(int64_t));
    go = malloc((size_t)(total > 0 ? total : 1) * sizeof(int64_t));
    fill = malloc((size_t)(nt > 0 ? nt : 1) * sizeof(int64_t));
    last_a = malloc((size_t)(nt > 0 ? nt : 1) * sizeof(int64_t));
    last_q = malloc((size_t)(nt > 0 ? nt : 1) * sizeof(int64_t));
    if (!gs || !ge || !go || !fill || !last_a || !last_q) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t t = 0; t < nt; t++) fill[t] = cnt[t] ? off[t] : -1; /* each thread's next slot, -1: no halves */
    for (Py_ssize_t j = 0; j < m; j++) {
        int64_t ev = order[j];
        if (kinds[ev] != complete) continue;
        int64_t t = code_at(evt, width, ev);
        int64_t at = fill[t];
        if (at < 0) continue;
        gs[at] = start[ev];
        ge[at] = end[ev];
        go[at] = ev;
        fill[t] = at + 1;
    }
    /* per thread, the previous half's search (halves mostly come in time order: a search then starts from the
     * previous one's place and gallops forward, its probes near each other in memory, not log2(slices) apart) */
    for (Py_ssize_t t = 0; t < nt; t++) last_a[t] = -1; /* (-1: no search yet) */
    for (Py_ssize_t i = 0; i < nf; i++) {
        int64_t t = out[i];
        out[i] = -1;
        if (t < 0) continue;
        int64_t lo = off[t], hi = off[t + 1], q = fts[i];
        /* the last slice starting at or before q (numpy: searchsorted(s, q, side="right") - 1): every slice
         * before `a` starts at or before q, every one from `z` on after it */
        int64_t a = lo, z = hi;
        if (last_a[t] >= 0 && q >= last_q[t]) {
            a = last_a[t];
            int64_t step = 1;
            z = a;
            while (z < hi && gs[z] <= q) {
                a = z + 1;
                z = a + step;
                step <<= 1;
            }
            if (z > hi) z = hi;
        }
        while (a < z) {
            int64_t mid = a + (z - a) / 2;
            if (gs[mid] <= q) a = mid + 1; else z = mid;
        }
        last_a[t] = a;
        last_q[t] = q;
        for (int64_t c = a - 1, steps = 0; c >= lo && steps < limit; c--, steps++) {
            if (gs[c] == q || ge[c] > q) {
                out[i] = go[c];
                break;
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&b[k]);
    free(cnt);
    free(off);
    free(gs);
    free(ge);
    free(go);
    free(fill);
    free(last_a);
    free(last_q);
    return result;
}

static PyObject *one_sided(PyObject *self, PyObject *args) {
    PyObject *a_cat, *a_keys, *a_role, *a_slot;
    int start_role;
    long long lo, n_slots;
    if (!PyArg_ParseTuple(args, "OOOiOLL", &a_cat, &a_keys, &a_role, &start_role, &a_slot, &lo, &n_slots)) return NULL;
    Py_buffer bc = {0}, bk = {0}, br = {0}, bs = {0};
    PyObject *result = NULL;
    uint8_t *seen = NULL;
    if (PyObject_GetBuffer(a_cat, &bc, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(a_keys, &bk, PyBUF_C_CONTIGUOUS) < 0) goto done;
    if (PyObject_GetBuffer(a_role, &br, PyBUF_C_CONTIGUOUS) < 0) goto done;
    if (PyObject_GetBuffer(a_slot, &bs, PyBUF_C_CONTIGUOUS) < 0) goto done;
    Py_ssize_t n = bk.len / 8, nc = bs.len / 8;
    int width = (int)bc.itemsize;
    if ((width != 2 && width != 8) || bc.len != n * width || br.len != n || bk.len % 8 || bs.len % 8 || n_slots < 0) {
        PyErr_SetString(PyExc_ValueError, "one_sided: buffers of other lengths or types");
        goto done;
    }
    seen = calloc((size_t)(n_slots > 0 ? n_slots : 1), 1);
    if (!seen) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *keys = bk.buf, *slot_of = bs.buf;
    const int8_t *role = br.buf;
    int64_t flows = 0, both = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = width == 2 ? ((const int16_t *)bc.buf)[i] : ((const int64_t *)bc.buf)[i];
        if (c < 0 || c >= nc) {
            bad = 1;
            break;
        }
        int64_t at = (int64_t)((uint64_t)slot_of[c] + ((uint64_t)keys[i] - (uint64_t)lo));
        if (at < 0 || at >= n_slots) {
            bad = 1;
            break;
        }
        uint8_t old = seen[at], now = old | (role[i] == start_role ? 1 : 2);
        flows += old == 0;
        both += now == 3 && old != 3;
        seen[at] = now;
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "one_sided: a category or slot out of range");
    else
        result = PyLong_FromLongLong((long long)(flows - both));
done:
    free(seen);
    if (bc.obj) PyBuffer_Release(&bc);
    if (bk.obj) PyBuffer_Release(&bk);
    if (br.obj) PyBuffer_Release(&br);
    if (bs.obj) PyBuffer_Release(&bs);
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
    {"bind_flows", bind_flows, METH_VARARGS,
     "bind_flows(time_order, kinds, complete, ev_thread, start, end, threads, fpid, ftid, fts, limit, out): see the "
     "source."},
    {"one_sided", one_sided, METH_VARARGS,
     "one_sided(fcat, keys, role, start_role, slot_of_cat, lo, n_slots): see the source."},
    {"times_ns", times_ns, METH_VARARGS, "times_ns(ts, dur, base, max_ns, start, end, bad): see the source."},
#ifdef HAVE_GATHER
    {"gather_ranges", gather_ranges, METH_VARARGS, "gather_ranges(src_fd, starts, ends, dst_fd): see the source."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", "Compiled array kernels of the model.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
