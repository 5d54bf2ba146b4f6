"""The optional compiled code: the column builder for Kineto traces (trntui/loaders/kineto/_scan.c) and the
model's array kernels (trntui/model/_kernels.c).

Built by `pip install .` / `pip install -e .` where a C compiler is available; where it is not (or with
TRNTUI_NO_EXT=1 in the environment) the build is skipped and trntui uses its pure-Python loader, which gives the
same results (`trntui info --version` says which parser is in use)."""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """A failed compile (no compiler, no Python headers) leaves the Python path; the install still succeeds."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any build failure: the pure-Python fallback
            print(f"trntui: the compiled Kineto parser was not built ({e}); the Python parser will be used")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            print(f"trntui: the compiled Kineto parser was not built ({e}); the Python parser will be used")


ext_modules = []
if os.environ.get("TRNTUI_NO_EXT", "") in ("", "0"):
    ext_modules.append(
        Extension(
            "trntui.loaders.kineto._scan",
            sources=["trntui/loaders/kineto/_scan.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    )
    ext_modules.append(
        Extension(
            "trntui.model._kernels",
            sources=["trntui/model/_kernels.c"],
            # (no floating-point contraction: times_ns computes `a*b + c` with two roundings, as numpy does)
            extra_compile_args=["-O3", "-ffp-contract=off"],
            optional=True,
        )
    )

setup(ext_modules=ext_modules, cmdclass={"build_ext": OptionalBuildExt})
