"""One BLAS thread while a learned policy decides (issue 34, point 5).

A policy's network runs on a few dozen rows at a time (DL2: a 40 × 18 job table through two
128-wide layers), far too little work to share between threads. NumPy's OpenBLAS threads it
anyway, and between two such products the scheduler's Python code runs while the BLAS threads
spin or sleep: on a busy 2-core machine each product then waited 30 ms instead of 0.1 ms, and
``dlsched simulate -w pollux -s dl2`` crawled (over 3,000 of them). Each product is computed
the same way by one thread (OpenBLAS splits the output between threads, not the sums), so
results do not change. Without threadpoolctl nothing is limited.
"""

from __future__ import annotations

import contextlib
from typing import Any

_controller: Any = None


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """A context in which NumPy's BLAS uses one thread (threadpoolctl; a no-op without it)."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a dependency; kept optional for embedders
            return contextlib.nullcontext()
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
