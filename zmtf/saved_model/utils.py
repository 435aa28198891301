"""``tf.saved_model.utils``: TensorInfo protos of graph tensors, and back.

    info = tf.saved_model.utils.build_tensor_info(x)     # name "x:0", DT_FLOAT, shape [-1, 3]
    x = tf.saved_model.utils.get_tensor_from_tensor_info(info)
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Graph, Operation, Tensor, get_default_graph
from zmtf.formats.graph_def_proto import enum_of_dtype, shape_proto
from zmtf.formats.meta_graph_proto import TensorInfo
from zmtf.framework.sparse_tensor import SparseTensor
from zmtf.ops.variables import Variable


def build_tensor_info(tensor: Any) -> TensorInfo:
    """The TensorInfo of a Tensor (name, dtype, static shape) or a SparseTensor (its three
    tensors' names, the values' dtype, the dense shape)."""
    if isinstance(tensor, Variable):
        tensor = tensor.value()
    if isinstance(tensor, SparseTensor):
        info = TensorInfo(dtype=enum_of_dtype(tensor.dtype.base_dtype),
                          tensor_shape=shape_proto(tensor.get_shape().dims))
        info.coo_sparse.CopyFrom(TensorInfo.CooSparse(
            values_tensor_name=tensor.values.name, indices_tensor_name=tensor.indices.name,
            dense_shape_tensor_name=tensor.dense_shape.name))
        return info
    if not isinstance(tensor, Tensor):
        raise TypeError(f"build_tensor_info takes a graph Tensor or SparseTensor, not a "
                        f"{type(tensor).__name__}")
    return TensorInfo(name=tensor.name, dtype=enum_of_dtype(tensor.dtype.base_dtype),
                      tensor_shape=shape_proto(tensor.shape.dims))


def build_tensor_info_from_op(op: Operation) -> TensorInfo:
    """A TensorInfo naming an op (dtype DT_INVALID, unknown shape), as TF's init-op
    signature stores it."""
    return TensorInfo(name=op.name, dtype=0, tensor_shape=shape_proto(None))


def _scoped(name: str, import_scope: str | None) -> str:
    return f"{import_scope}/{name}" if import_scope else name


def get_tensor_from_tensor_info(tensor_info: TensorInfo, graph: Graph | None = None,
                                import_scope: str | None = None) -> Any:
    """The Tensor (or SparseTensor) a TensorInfo names in ``graph`` (default graph)."""
    graph = graph or get_default_graph()
    encoding = tensor_info.WhichOneof("encoding")
    if encoding == "name":
        return graph.get_tensor_by_name(_scoped(tensor_info.name, import_scope))
    if encoding == "coo_sparse":
        sparse = tensor_info.coo_sparse
        get = lambda name: graph.get_tensor_by_name(_scoped(name, import_scope))  # noqa: E731
        return SparseTensor(get(sparse.indices_tensor_name),
                            get(sparse.values_tensor_name),
                            get(sparse.dense_shape_tensor_name))
    if encoding == "composite_tensor":
        raise NotImplementedError("get_tensor_from_tensor_info: composite tensors (ragged "
                                  "tensors, TF2 type specs) are not built in zmtf")
    raise ValueError("Invalid TensorInfo.encoding: None. Valid encodings are `coo_sparse`, "
                     "`composite_tensor`, or `name` for a dense tensor.")


def get_element_from_tensor_info(tensor_info: TensorInfo, graph: Graph | None = None,
                                 import_scope: str | None = None) -> Any:
    """The Operation or Tensor a TensorInfo's name refers to ("init" or "y:0")."""
    graph = graph or get_default_graph()
    return graph.as_graph_element(_scoped(tensor_info.name, import_scope))


__all__ = ["build_tensor_info", "build_tensor_info_from_op", "get_element_from_tensor_info",
           "get_tensor_from_tensor_info"]
