"""NodeDef mappings of the ops a feature-column model serves with: sparse plumbing, hashing,
lookup tables, bucketizing, crossing, and the partition/stitch of a partitioned embedding.

They live apart from graph_def_ops.py's table because two need code both ways (``ExtraAttrs``):
DynamicStitch's ``N`` counts pairs of inputs, and SparseCross carries the dtypes of its
inputs as list-of-type attrs. Without these, ``Estimator.export_saved_model`` of a wide &
deep model stops at the first of them.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.interop.graph_def_ops import ExtraAttrs, OpMapping, _add, _scalar_operand
from zmtf.formats.graph_def_proto import AttrValue, dtype_of_enum, enum_of_dtype

_T = {"T": "in0"}
_add(OpMapping("Bucketize", "Bucketize", types=_T, attrs={"boundaries": ("floats", "boundaries", None)}))
_add(OpMapping("Where", "Where", types=_T))
_add(OpMapping("Unique", "Unique", types=_T, attrs={"out_idx": ("type", "out_idx", "int32")}))
_add(OpMapping("SegmentSum", "SegmentSum", types={"T": "in0", "Tindices": "in1"}, arity=2))
_add(OpMapping("SparseReshape", "SparseReshape", arity=3))
_add(OpMapping("SparseFillEmptyRows", "SparseFillEmptyRows", types={"T": "in1"}, arity=4))
_add(OpMapping("SparseToDense", "SparseToDense", types={"T": "in2", "Tindices": "in0"},
               attrs={"validate_indices": ("b", "validate_indices", True)}, arity=4))
_add(OpMapping("StringToHashBucketFast", "StringToHashBucketFast",
               attrs={"num_buckets": ("i", "num_buckets", None)}))
_add(OpMapping("DynamicPartition", "DynamicPartition", types=_T,
               attrs={"num_partitions": ("i", "num_partitions", None)}, arity=2))
_add(OpMapping("Cumsum", "Cumsum", types={"T": "in0", "Tidx": "idx"},
               attrs={"exclusive": ("b", "exclusive", False), "reverse": ("b", "reverse", False)},
               operands=(_scalar_operand("axis"),)))
_add(OpMapping("HashTableV2", "HashTableV2", arity=0, attrs={
    "container": ("s", "container", ""), "shared_name": ("s", "shared_name", ""),
    "use_node_name_sharing": ("b", "use_node_name_sharing", False),
    "key_dtype": ("type", "key_dtype", None), "value_dtype": ("type", "value_dtype", None)}))
_TABLE_TYPES = {"Tin": "in1", "Tout": "in2"}
# zmtf's value_shape attr: [] for the scalar-valued tables TF's HashTableV2 holds
_add(OpMapping("LookupTableFindV2", "LookupTableFindV2", types=_TABLE_TYPES, arity=3,
               private={"value_shape": []}))
_add(OpMapping("LookupTableImportV2", "LookupTableImportV2", types=_TABLE_TYPES, arity=3))
_add(OpMapping("InitializeTableV2", "LookupTableImportV2", types=_TABLE_TYPES, arity=3),
     export=False)


def _type(dtype: Any) -> AttrValue:
    return AttrValue(type=enum_of_dtype(dtype))


def _types(tensors: list[Any]) -> AttrValue:
    return AttrValue(list=AttrValue.ListValue(type=[enum_of_dtype(t.dtype) for t in tensors]))


def _count(node: Any, name: str) -> int:
    if name not in node.attr:
        raise ValueError(f"missing attr '{name}'")
    return int(node.attr[name].i)


def _stitch_write(op: Any) -> dict[str, AttrValue]:
    return {"N": AttrValue(i=op.attrs["N"]), "T": _type(op.inputs[-1].dtype)}


def _stitch_read(node: Any, inputs: list[Any]) -> dict[str, Any]:
    n = _count(node, "N")
    if 2 * n != len(inputs):
        raise ValueError(f"N={n} but {len(inputs)} inputs (expected N indices and N data)")
    return {"N": n}


_add(OpMapping("DynamicStitch", "DynamicStitch", list_input=True,
               extra=ExtraAttrs(("N", "T"), ("N",), _stitch_write, _stitch_read)))


def _cross_write(op: Any) -> dict[str, AttrValue]:
    n, dense = op.attrs["N"], op.attrs["num_dense"]
    internal = dtypes.int64 if op.attrs["hashed_output"] else dtypes.string
    return {"N": AttrValue(i=n), "sparse_types": _types(op.inputs[n:2 * n]),
            "dense_types": _types(op.inputs[3 * n:3 * n + dense]),
            "out_type": _type(op.outputs[1].dtype), "internal_type": _type(internal)}


def _cross_read(node: Any, inputs: list[Any]) -> dict[str, Any]:
    n = _count(node, "N")
    dense = len(node.attr["dense_types"].list.type) if "dense_types" in node.attr else 0
    if 3 * n + dense != len(inputs):
        raise ValueError(f"N={n} and {dense} dense inputs need {3 * n + dense} inputs, "
                         f"got {len(inputs)}")
    declared = list(node.attr["sparse_types"].list.type) if "sparse_types" in node.attr else []
    for position, (enum, tensor) in enumerate(zip(declared, inputs[n:2 * n])):
        if dtype_of_enum(enum, f"sparse_types[{position}]") != tensor.dtype.base_dtype:
            raise ValueError(f"sparse_types[{position}] does not match input {n + position} "
                             f"({tensor.dtype.name})")
    return {"N": n, "num_dense": dense}


_add(OpMapping("SparseCross", "SparseCross", list_input=True,
               attrs={"hashed_output": ("b", "hashed_output", None),
                      "num_buckets": ("i", "num_buckets", 0), "hash_key": ("i", "hash_key", 0)},
               extra=ExtraAttrs(("N", "sparse_types", "dense_types", "out_type", "internal_type"),
                                ("N", "num_dense"), _cross_write, _cross_read)))
