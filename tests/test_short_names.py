"""Short C++/Triton names (issue 26 item 6): Nsight-like, and distinct names never read the same."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from trntui.report.format import short_name, short_names


def test_long_names_are_shortened_keeping_what_tells_them_apart():
    """Nsight-like short names: no return type, namespaces or parameter lists; template arguments elided in the
    middle; names that would read the same keep the part where they differ; short names are untouched."""
    names = [
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<int>, "
        "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<int>, at::detail::Array<char*, 3>)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
        "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
    ]
    for width in (60, 40, 30):
        short = short_names(names, width)
        assert len(set(short)) == 3, short
        assert all(len(s) <= width and s.startswith("vectorized_elem") for s in short), short
    assert short_names(names, 200) == names
    assert short_name("triton_poi_fused_add_cos_sin_0", 40) == "triton_poi_fused_add_cos_sin_0"
    assert short_name(names[0], 80) == "vectorized_elementwise_kernel<4, CUDAFunctor_add<int>, Array<char*, 3>>"


def test_names_that_simplify_to_the_same_text_stay_distinct():
    """Two kernels that differ only in a namespace or a parameter list simplify to the same text (this crashed:
    min of an empty sequence); at every width their short names differ, and name the kernel first."""
    base = "void at::native::{ns}reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float>, " \
           "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float>, {arg}>)"
    names = [base.format(ns="", arg="unsigned int, float, 4"), base.format(ns="(anonymous namespace)::", arg="unsigned int, float, 4"),
             base.format(ns="", arg="unsigned int, float, 2")]
    for width in (8, 12, 20, 30, 40, 60, 100):
        short = short_names(names, width)
        assert len(set(short)) == 3, (width, short)
        assert all(len(s) <= width for s in short), short
    assert all(s.startswith("reduce_kernel<") for s in short_names(names, 60))
    same = short_names([names[0], names[0], names[1]], 40)
    assert same[0] == same[1] != same[2]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet="ab<>,:() _&", min_size=0, max_size=70), min_size=1, max_size=8),
       st.integers(min_value=8, max_value=80))
def test_distinct_names_never_read_the_same(names, width):
    """Any names, any width from 8 cells: equal names read the same, different ones differently, none wider."""
    short = short_names(names, width)
    assert len(short) == len(names)
    assert all(len(s) <= width for s in short)
    assert len(set(short)) == len(set(names))
    for n, s in zip(names, short):
        assert s == short[names.index(n)]
        if len(n) <= width:
            assert s == n or len(set(short)) == len(set(names))
