"""Where sliding windows land on an NHWC input, shared by the convolution and pooling kernels.

``window_view`` is the one idea: for an input padded the way TF pads it (``WindowPlan.padded``),
a [batch, out_h, out_w, f_h, f_w, channels] strided view whose [:, i, j] is the window that
output pixel (i, j) reads. Nothing is copied to make it; conv.py copies it into im2col
columns, pool.py reduces over its taps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
from numpy.lib.stride_tricks import as_strided

from zmtf.framework.errors import InvalidArgumentError, UnimplementedError
from zmtf.framework.window_geometry import Span, span
from zmtf.kernels.cpu.common import shape_str

_Array = np.ndarray


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """Where the windows of one op land on its input (TF's SAME/VALID rules)."""

    rows: Span
    cols: Span
    window: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]

    def padded(self, x: _Array, fill: float) -> _Array:
        """``x`` with TF's padding around height and width (``x`` itself when there is none)."""
        rows = (self.rows.pad_before, self.rows.pad_after)
        cols = (self.cols.pad_before, self.cols.pad_after)
        if not any(rows + cols):
            return x
        widths = ((0, 0), rows, cols, (0, 0))
        return np.pad(x, widths, mode="constant", constant_values=fill)

    def cropped(self, padded: _Array, height: int, width: int) -> _Array:
        """The inverse of ``padded``: the [height, width] interior."""
        top, left = self.rows.pad_before, self.cols.pad_before
        return padded[:, top:top + height, left:left + width, :]

    def taps(self) -> Iterator[tuple[int, int, int]]:
        """(tap index, row, column) over the window, row-major: TF's scan order."""
        f_h, f_w = self.window
        for i in range(f_h * f_w):
            yield i, i // f_w, i % f_w


def window_plan(attrs: dict, in_hw: tuple[int, int], window: tuple[int, int],
                node: str) -> WindowPlan:
    """The plan for a [height, width] input under a node's ``strides``, ``padding`` and
    ``dilations`` attrs, which are checked here, once, for every windowed kernel."""
    if attrs.get("data_format", "NHWC") != "NHWC":
        raise InvalidArgumentError(
            f"zmtf's CPU kernels only support data_format NHWC (as TF: 'Conv2D on CPU only "
            f"supports NHWC'), got {attrs['data_format']!r} (node '{node}'); transpose the "
            f"input to [batch, height, width, channels]")
    strides = [int(s) for s in attrs["strides"]]
    dilations = [int(d) for d in attrs.get("dilations", (1, 1, 1, 1))]
    if strides[0] != 1 or strides[3] != 1 or dilations[0] != 1 or dilations[3] != 1:
        raise UnimplementedError(
            f"strides {strides} and dilations {dilations} must be 1 in the batch and depth "
            f"dimensions (node '{node}')")
    try:
        rows = span(in_hw[0], window[0], strides[1], dilations[1], attrs["padding"])
        cols = span(in_hw[1], window[1], strides[2], dilations[2], attrs["padding"])
    except ValueError as error:
        raise InvalidArgumentError(f"{error} (node '{node}')") from None
    return WindowPlan(rows, cols, window, (strides[1], strides[2]), (dilations[1], dilations[2]))


def window_view(padded: _Array, plan: WindowPlan, writeable: bool = False) -> _Array:
    """[batch, out_h, out_w, f_h, f_w, channels] view of ``padded``: each output's window."""
    s_n, s_h, s_w, s_c = padded.strides
    shape = (padded.shape[0], plan.rows.size, plan.cols.size, *plan.window, padded.shape[3])
    strides = (s_n, s_h * plan.strides[0], s_w * plan.strides[1],
               s_h * plan.dilations[0], s_w * plan.dilations[1], s_c)
    return as_strided(padded, shape, strides, writeable=writeable)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """float16 sums run in float32 (rounded once at the end); other dtypes in themselves."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def zeros_padded(plan: WindowPlan, shape: tuple, dtype: np.dtype) -> _Array:
    """Zeros the shape of a padded input: the gradient is added into it, then cropped."""
    height = shape[1] + plan.rows.pad_before + plan.rows.pad_after
    width = shape[2] + plan.cols.pad_before + plan.cols.pad_after
    return np.zeros((shape[0], height, width, shape[3]), dtype)


def require_rank4(x: _Array, what: str, node: str) -> None:
    """InvalidArgumentError unless ``x`` is 4-D (NHWC, or a filter)."""
    if x.ndim != 4:
        raise InvalidArgumentError(f"{what} must be 4-dimensional, got shape "
                                   f"{shape_str(x.shape)} (node '{node}')")
