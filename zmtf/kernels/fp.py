"""Float-error policy of the kernels: silent, as in TF (overflow gives inf, 0/0 gives nan).

Each kernel that may raise a numpy float warning wraps its work in ``quiet_fp()``, or the
hottest ones their one numpy call in ``quietly()``. Entering
``np.errstate`` costs ~3 us, paid ~20 times per training step, so the executor enters it
once per run of ready nodes with ``quiet_section()``, and a ``quiet_fp()`` inside is free.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable

import numpy as np

#: True inside a quiet_section; a context variable like numpy's own error state
_quiet: contextvars.ContextVar[bool] = contextvars.ContextVar("zmtf_quiet_fp", default=False)
_ALREADY_QUIET = contextlib.nullcontext()
#: ``in_quiet_section()``: whether numpy's float warnings are off here already (a C call:
#: a kernel asks it before paying for ``quietly``)
in_quiet_section = _quiet.get


def quiet_fp() -> contextlib.AbstractContextManager[Any]:
    """Silence numpy's float warnings for a kernel (free inside a ``quiet_section``)."""
    return _ALREADY_QUIET if _quiet.get() else np.errstate(all="ignore")


def quietly(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` with numpy's float warnings silenced.

    For the kernels of every step (matmul, elementwise, sums): one Python-level call, where
    ``with quiet_fp():`` makes three even inside a quiet section (quiet_fp and the
    nullcontext's ``__enter__``/``__exit__``)."""
    if _quiet.get():
        return function(*args, **kwargs)
    with np.errstate(all="ignore"):
        return function(*args, **kwargs)


try:   # numpy 2's error state is a context variable: set it directly, as errstate does
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
except ImportError:   # pragma: no cover - another numpy layout: errstate's public route
    _extobj_contextvar = _make_extobj = None


class quiet_section:
    """Silence numpy's float warnings in this context while several kernels run.

    It sets numpy's error-state context variable itself when numpy has one (what
    ``np.errstate(all="ignore")`` does, without its three Python-level calls per run)."""

    __slots__ = ("_errstate", "_numpy_token", "_token")

    def __enter__(self) -> None:
        if _make_extobj is not None:
            self._numpy_token = _extobj_contextvar.set(_make_extobj(all="ignore"))
        else:
            self._errstate = np.errstate(all="ignore")
            self._errstate.__enter__()
        self._token = _quiet.set(True)

    def __exit__(self, *exc: Any) -> None:
        _quiet.reset(self._token)
        if _make_extobj is not None:
            _extobj_contextvar.reset(self._numpy_token)
        else:
            self._errstate.__exit__(*exc)
