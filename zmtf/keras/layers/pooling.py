"""Keras pooling layers in graph mode (channels_last): Max/AveragePooling1D/2D and
GlobalAverage/GlobalMaxPooling1D/2D."""

from __future__ import annotations

from typing import Any

from zmtf.ops import array_ops, conv_ops, math_ops
from zmtf.keras.base_layer import Layer
from zmtf.keras.layers.convolutional import _padding, _tuple


class _Pooling(Layer):
    """A window op over the spatial axes; ``strides`` defaults to ``pool_size``."""

    rank = 2
    pool = staticmethod(conv_ops.max_pool)

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{type(self).__name__} in zmtf supports data_format='channels_last'"
                             f" only, got {data_format!r}")
        self.pool_size = _tuple(pool_size, self.rank, "pool_size")
        self.strides = self.pool_size if strides is None else _tuple(strides, self.rank, "strides")
        self.padding = _padding(padding)

    def call(self, inputs: Any) -> Any:
        if self.rank == 2:
            return self.pool(inputs, [1, *self.pool_size, 1], [1, *self.strides, 1], self.padding)
        pooled = self.pool(array_ops.expand_dims(inputs, 2), [1, self.pool_size[0], 1, 1],
                           [1, self.strides[0], 1, 1], self.padding)
        return array_ops.squeeze(pooled, [2])


class MaxPooling2D(_Pooling):
    """The maximum of each window."""


class AveragePooling2D(_Pooling):
    """The mean of each window (with 'same', padding is not counted)."""

    pool = staticmethod(conv_ops.avg_pool)


class MaxPooling1D(_Pooling):
    rank = 1


class AveragePooling1D(_Pooling):
    rank = 1
    pool = staticmethod(conv_ops.avg_pool)


class _GlobalPooling(Layer):
    axes = [1, 2]
    reduce = staticmethod(math_ops.reduce_mean)

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{type(self).__name__} in zmtf supports data_format='channels_last'"
                             f" only, got {data_format!r}")

    def call(self, inputs: Any) -> Any:
        return self.reduce(inputs, self.axes)


class GlobalAveragePooling2D(_GlobalPooling):
    """The mean over height and width: [batch, h, w, c] -> [batch, c]."""


class GlobalMaxPooling2D(_GlobalPooling):
    """The maximum over height and width: [batch, h, w, c] -> [batch, c]."""

    reduce = staticmethod(math_ops.reduce_max)


class GlobalAveragePooling1D(_GlobalPooling):
    axes = [1]


class GlobalMaxPooling1D(_GlobalPooling):
    axes = [1]
    reduce = staticmethod(math_ops.reduce_max)


MaxPool1D, MaxPool2D, AvgPool1D, AvgPool2D = MaxPooling1D, MaxPooling2D, AveragePooling1D, AveragePooling2D
GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D
