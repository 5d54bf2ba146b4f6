"""trntui: a terminal profiler explorer for PyTorch traces (Kineto, Neuron system traces).

Kept import-free so that `trntui summary` starts fast; import submodules directly.
"""

__version__ = "0.1.0"
