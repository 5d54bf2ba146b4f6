/* Compiled array kernels of the model (optional: each has a numpy fallback that gives identical results, used
 * where this extension is not built; trntui/model/kernels.py picks one).
 *
 * stack_parents(new_thread, end, out): torch's containment stack in one pass. Events are in (thread, start,
 * -end) order; new_thread[i] != 0 where a thread's events begin; out[i] = the nearest earlier event j of the same
 * thread with end[j] >= end[i] (end[j] > end[i] for a zero-length event i, whose start is its end), else -1.
 * A stack of the candidates, ends decreasing: an entry that ends too early for event i ends too early for every
 * later event as well (i itself qualifies wherever it would, and is nearer), so it is popped for good. O(n).
 * Buffers: new_thread uint8, end int64, out int64 (writable), all of one length; `start` is not needed. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

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

static PyMethodDef methods[] = {
    {"stack_parents", stack_parents, METH_VARARGS, "stack_parents(new_thread, start, end, out): see the source."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", "Compiled array kernels of the model.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
