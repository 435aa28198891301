"""zmtf's ParseExample <-> TF's ParseExample NodeDef (the V1 op TF Serving runs).

zmtf keeps the feature keys, types, shapes and defaults as attrs of one op with a single
input; TF passes ``names``, each key and each default as a string/const input and the counts,
types and shapes as attrs. The translation is written here in code rather than in the op
table of graph_def_ops.py because the number of TF inputs depends on the features.

Sparse features (tf.VarLenFeature) are written and read too, but TF orders the outputs
differently: all sparse indices, all sparse values, all sparse shapes, then the dense values,
where zmtf puts the dense values first and then each sparse feature's (indices, values,
shape). ``tf_output_index`` and ``zmtf_output_index`` translate the references between them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import Operation, Tensor
from zmtf.formats.graph_def_proto import AttrValue, NodeDef, dims_of, dtype_of_enum, \
    enum_of_dtype, shape_proto

#: the attrs a TF ParseExample NodeDef carries
TF_ATTRS = {"Nsparse", "Ndense", "sparse_types", "Tdense", "dense_shapes"}


def _counts(attrs: dict[str, Any]) -> tuple[int, int]:
    return len(attrs.get("sparse_keys") or []), len(attrs["keys"])


def tf_output_index(op: Operation, index: int) -> int:
    """The TF output number of zmtf ParseExample output ``index``."""
    n_sparse, n_dense = _counts(op.attrs)
    if index < n_dense:
        return 3 * n_sparse + index
    feature, part = divmod(index - n_dense, 3)
    return part * n_sparse + feature


def zmtf_output_index(op: Operation, index: int) -> int:
    """The zmtf output number of TF ParseExample output ``index`` (the inverse)."""
    n_sparse, _ = _counts(op.attrs)
    if index >= 3 * n_sparse:
        return index - 3 * n_sparse
    part, feature = divmod(index, n_sparse)
    return len(op.attrs["keys"]) + 3 * feature + part


def _types_attr(types: list[Any]) -> AttrValue:
    return AttrValue(list=AttrValue.ListValue(type=[enum_of_dtype(as_dtype(t)) for t in types]))


def export_parse_example(op: Operation, node: NodeDef, const: Any) -> None:
    """Fill ``node`` (inputs already holding ``serialized``) from the zmtf op; ``const(op,
    suffix, value)`` adds a Const node and returns its name."""
    attrs = op.attrs
    sparse_keys = attrs.get("sparse_keys") or []
    types = [as_dtype(t) for t in attrs["types"]]
    node.input.append(const(op, "names", np.array([], dtype=object)))
    node.input.extend(const(op, f"sparse_keys_{n}", np.array(key.encode(), dtype=object))
                      for n, key in enumerate(sparse_keys))
    node.input.extend(const(op, f"dense_keys_{n}", np.array(key.encode(), dtype=object))
                      for n, key in enumerate(attrs["keys"]))
    for n, (dtype, default) in enumerate(zip(types, attrs["defaults"])):
        value = np.zeros([0], dtype=dtype.np) if default is None else np.asarray(default)
        if dtype.name == "string":
            value = value.astype(object)
        node.input.append(const(op, f"dense_defaults_{n}", value))
    node.attr["Nsparse"].CopyFrom(AttrValue(i=len(sparse_keys)))
    node.attr["Ndense"].CopyFrom(AttrValue(i=len(types)))
    node.attr["sparse_types"].CopyFrom(_types_attr(attrs.get("sparse_types") or []))
    node.attr["Tdense"].CopyFrom(_types_attr(types))
    node.attr["dense_shapes"].CopyFrom(AttrValue(list=AttrValue.ListValue(
        shape=[shape_proto(list(s)) for s in attrs["shapes"]])))


def _const_value(tensor: Tensor, what: str) -> np.ndarray:
    if tensor.op.type != "Const":
        raise ValueError(f"zmtf needs its {what} input to be a Const, but '{tensor.name}' is a "
                         f"{tensor.op.type}; zmtf keeps it static")
    return tensor.op.attrs["value"]


def _key(tensor: Tensor, what: str) -> str:
    value = _const_value(tensor, what)
    if value.shape != ():
        raise ValueError(f"its {what} input must be a string scalar, got shape {list(value.shape)}")
    item = value.item()
    return item.decode() if isinstance(item, bytes) else str(item)


def import_parse_example(name: str, node: NodeDef, inputs: list[Tensor],
                         attrs: dict[str, Any]) -> list[Tensor]:
    """Set the zmtf attrs of a TF ParseExample node; return its one zmtf input."""
    where = f"node '{name}' (ParseExample)"
    n_sparse = node.attr["Nsparse"].i if "Nsparse" in node.attr else 0
    n_dense = node.attr["Ndense"].i if "Ndense" in node.attr else 0
    types = [dtype_of_enum(t, where).name for t in node.attr["Tdense"].list.type]
    shapes = [dims_of(s, where) for s in node.attr["dense_shapes"].list.shape]
    sparse_types = [dtype_of_enum(t, where).name for t in node.attr["sparse_types"].list.type]
    if len(inputs) != 2 + n_sparse + 2 * n_dense or len(types) != n_dense or \
            len(shapes) != n_dense or len(sparse_types) != n_sparse:
        raise ValueError(f"Nsparse={n_sparse} and Ndense={n_dense} but {len(inputs)} inputs, "
                         f"{len(sparse_types)} sparse_types, {len(types)} Tdense and "
                         f"{len(shapes)} dense_shapes")
    sparse_keys = [_key(t, f"sparse_keys_{n}") for n, t in enumerate(inputs[2:2 + n_sparse])]
    inputs = inputs[:2] + inputs[2 + n_sparse:]
    if any(d is None or d < 0 for s in shapes for d in s):
        raise ValueError(f"dense_shapes {shapes} must be fully defined in zmtf")
    defaults = []
    for n, (dtype, shape) in enumerate(zip(types, shapes)):
        value = _const_value(inputs[2 + n_dense + n], f"dense_defaults_{n}")
        if value.size == 0 and int(np.prod(shape)) != 0:
            defaults.append(None)
            continue
        value = np.array(value, dtype=object if dtype == "string" else as_dtype(dtype).np)
        defaults.append(value.reshape(shape))
        defaults[-1].setflags(write=False)
    attrs.update(keys=[_key(t, f"dense_keys_{n}") for n, t in enumerate(inputs[2:2 + n_dense])],
                 types=types, shapes=shapes, defaults=defaults, sparse_keys=sparse_keys,
                 sparse_types=sparse_types)
    return inputs[:1]


__all__ = ["TF_ATTRS", "export_parse_example", "import_parse_example", "tf_output_index",
           "zmtf_output_index"]
