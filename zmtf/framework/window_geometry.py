"""Where a sliding window (convolution, pooling) lands: TF's output sizes and SAME padding.

Pure integer rules in one place, shared by op shape inference (``ops/conv_ops.py``)
and the CPU kernels (``kernels/cpu/conv.py``), so a graph's static shape and the array the
kernel returns can never disagree. Errors are ValueErrors; the kernels re-raise them as
InvalidArgumentError naming the node.
"""

from __future__ import annotations

from dataclasses import dataclass

PADDINGS = ("SAME", "VALID")


@dataclass(frozen=True, slots=True)
class Span:
    """One spatial dimension of a windowed op: output length and the zeros added each side."""

    size: int
    pad_before: int
    pad_after: int


def effective_window(window: int, dilation: int) -> int:
    """The extent a dilated window covers: taps ``dilation`` apart."""
    return (window - 1) * dilation + 1


def span(in_size: int, window: int, stride: int, dilation: int, padding: str) -> Span:
    """TF's rule. VALID: ``(in - eff) // stride + 1``, no padding. SAME: ``ceil(in / stride)``,
    padded by ``max((out - 1) * stride + eff - in, 0)`` of which the smaller half comes
    first (``pad_before = total // 2``), as TF's ``GetWindowedOutputSize`` does."""
    if window < 1 or stride < 1 or dilation < 1:
        raise ValueError(f"window {window}, stride {stride} and dilation {dilation} must all "
                         f"be >= 1")
    eff = effective_window(window, dilation)
    if padding == "VALID":
        numerator = in_size - eff + stride
        size = int(numerator / stride)  # C++ division: truncates toward zero
        if size < 0:
            raise ValueError(
                f"Computed output size would be negative: {size} "
                f"[input_size: {in_size}, effective_filter_size: {eff}, stride: {stride}]; "
                f"use padding='SAME' or a smaller window")
        return Span(size, 0, 0)
    if padding == "SAME":
        size = (in_size + stride - 1) // stride
        total = max((size - 1) * stride + eff - in_size, 0)
        return Span(size, total // 2, total - total // 2)
    raise ValueError(f"padding must be one of {', '.join(PADDINGS)}, got {padding!r}")
