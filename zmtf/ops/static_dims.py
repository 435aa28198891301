"""The one rank check the shape functions of the image and nn ops share."""

from __future__ import annotations

from zmtf.framework.graph import Tensor


def static_dims(tensor: Tensor, rank: int, what: str) -> list[int | None]:
    """``tensor``'s static dims (all None when its rank is unknown); ValueError, worded as
    TF's shape inference, when the rank is known and is not ``rank``."""
    if tensor.shape.ndims is None:
        return [None] * rank
    if tensor.shape.ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {tensor.shape.ndims} for "
                         f"'{what}' ({tensor.name} of shape {tensor.shape})")
    return tensor.shape.as_list()
