"""How each zmtf op is written as a TensorFlow NodeDef, and read back: one table, by TF op type.

zmtf keeps some of TF's inputs as static attrs (a reduction's axes, a transpose's perm, a
concat's axis, strided-slice bounds...). On export those become Const nodes named as TF
names them ("Mean/reduction_indices", "concat/axis"); on import the input must be a Const in
the GraphDef and its value becomes the attr again, or the import fails naming the node.

TF's type attrs (``T``, ``Tidx``, ``SrcT``...) are derived on export from the tensors' dtypes
and checked on import. Every attr a NodeDef carries must be known for its op (an unknown one
is refused: it could change the meaning), and every zmtf attr must be written (an op with an
attr the table does not know is refused on export) — nothing is dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.ops.strided_slice_spec import MASKS as _MASKS, spec_to_strided_slice, strided_slice_to_spec
from zmtf.formats.graph_def_proto import AttrValue, dims_of, dtype_of_enum, enum_of_dtype, \
    shape_proto

#: attr kinds: how a zmtf attr value becomes an AttrValue and back
_TO_ATTR: dict[str, Callable[[Any], AttrValue]] = {
    "b": lambda v: AttrValue(b=bool(v)),
    "i": lambda v: AttrValue(i=int(v)),
    "f": lambda v: AttrValue(f=float(v)),
    "s": lambda v: AttrValue(s=str(v).encode()),
    "type": lambda v: AttrValue(type=enum_of_dtype(as_dtype(v))),
    "shape": lambda v: AttrValue(shape=shape_proto(v)),
    "ints": lambda v: AttrValue(list=AttrValue.ListValue(i=[int(x) for x in v])),
    "floats": lambda v: AttrValue(list=AttrValue.ListValue(f=[float(x) for x in v])),
}


def _from_attr(kind: str, value: AttrValue, where: str) -> Any:
    which = value.WhichOneof("value")
    expected = {"ints": "list", "floats": "list", "b": "b", "i": "i", "f": "f", "s": "s", "type": "type",
                "shape": "shape"}[kind]
    if which != expected and not (which is None and kind in ("b", "i", "f", "s")):
        raise ValueError(f"{where}: expected an attr of kind '{expected}', got {which}")
    if kind == "ints":
        return list(value.list.i)
    if kind == "floats":
        return list(value.list.f)
    if kind == "s":
        return value.s.decode("utf-8", "replace")
    if kind == "type":
        return dtype_of_enum(value.type, where).name
    if kind == "shape":
        return dims_of(value.shape, where)
    return getattr(value, kind)


@dataclass(frozen=True)
class OpMapping:
    """One TF op type and the zmtf op it is.

    ``attrs``: TF attr -> (kind, zmtf attr, default) copied both ways (zmtf attr None: a TF
    attr zmtf ignores, accepted only at its default). ``types``: TF type attr -> where its
    dtype comes from ("in0", "in1": derived on export, checked on import; "idx": an
    int32/int64 operand). ``operands``: extra TF
    inputs that are zmtf attrs, as (TF input name, to_const(attrs, inputs),
    from_const(value, attrs), the zmtf attr).
    ``list_input``: the TF op takes its data inputs as one list (``N`` attr).
    ``extra``: an ``ExtraAttrs`` for TF attrs that need code both ways (list-of-type attrs,
    an ``N`` that is not the input count); it also writes and reads ``N`` when given.
    """

    tf_op: str
    zmtf_op: str
    attrs: dict[str, tuple[str, str | None, Any]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    operands: tuple[tuple[str, Callable, Callable], ...] = ()
    list_input: bool = False
    arity: int = 1                                          # data inputs, when not a list
    private: dict[str, Any] = field(default_factory=dict)   # zmtf-private attrs set on import
    extra: Any = None


@dataclass(frozen=True)
class ExtraAttrs:
    """TF attrs computed by code: ``write(op)`` gives them (by TF name) on export,
    ``read(node, inputs)`` the zmtf attrs on import. ``tf_names``: the TF attrs it owns;
    ``zmtf_names``: the zmtf attrs it writes."""

    tf_names: tuple[str, ...]
    zmtf_names: tuple[str, ...]
    write: Callable[[Any], dict[str, AttrValue]]
    read: Callable[[Any, list[Any]], dict[str, Any]]


TF_OPS: dict[str, OpMapping] = {}        # by TF op type (import)
ZMTF_OPS: dict[str, OpMapping] = {}      # by zmtf op type (export)


def _add(mapping: OpMapping, export: bool = True) -> None:
    TF_OPS[mapping.tf_op] = mapping
    if export:
        ZMTF_OPS.setdefault(mapping.zmtf_op, mapping)


_T = {"T": "in0"}
for _op in ("Abs Neg Exp Log Log1p Expm1 Sqrt Rsqrt Square Reciprocal Sign Floor Ceil Round Rint "
            "Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Tanh Sigmoid Relu Relu6 "
            "Softplus Softmax LogSoftmax Erf Erfc Lgamma Digamma IsNan IsInf IsFinite Identity "
            "StopGradient ZerosLike OnesLike Snapshot").split():
    _add(OpMapping(_op, _op, types=_T))
for _op in ("Add AddV2 Sub Mul RealDiv FloorDiv FloorMod TruncateDiv TruncateMod Maximum Minimum "
            "Pow SquaredDifference Atan2 DivNoNan Less LessEqual Greater GreaterEqual").split():
    _add(OpMapping(_op, _op, types=_T, private={"_op_type": _op}, arity=2))
for _op in ("Equal", "NotEqual"):
    _add(OpMapping(_op, _op, types=_T, attrs={"incompatible_shape_error": ("b", None, True)},
                   private={"_op_type": _op}, arity=2))
for _op, _n in (("LogicalAnd", 2), ("LogicalOr", 2), ("LogicalNot", 1), ("NoOp", 0)):
    _add(OpMapping(_op, _op, arity=_n))
for _op in ("Select", "SelectV2"):
    _add(OpMapping(_op, _op, types={"T": "in1"}, arity=3))
_add(OpMapping("Switch", "Switch", types=_T, arity=2))
_add(OpMapping("Merge", "Merge", types=_T, list_input=True, private={"_cond_pred": None}))
_add(OpMapping("AddN", "AddN", types=_T, list_input=True))
_add(OpMapping("SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits", types=_T,
               arity=2))
_add(OpMapping("SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
               types={"T": "in0", "Tlabels": "in1"}, arity=2))
_add(OpMapping("BiasAdd", "BiasAdd", types=_T, attrs={"data_format": ("s", None, "NHWC")},
               arity=2))
_add(OpMapping("Placeholder", "Placeholder", arity=0,
               attrs={"dtype": ("type", "dtype", None), "shape": ("shape", "shape", None)}))
_add(OpMapping("MatMul", "MatMul", types=_T, attrs={
    "transpose_a": ("b", "transpose_a", False), "transpose_b": ("b", "transpose_b", False),
    "grad_a": ("b", None, False), "grad_b": ("b", None, False)}, arity=2))
_BMM = {"adj_x": ("b", "adj_x", False), "adj_y": ("b", "adj_y", False),
        "grad_x": ("b", None, False), "grad_y": ("b", None, False)}
_add(OpMapping("BatchMatMulV2", "BatchMatMulV2", types=_T, attrs=_BMM, arity=2))
_add(OpMapping("BatchMatMul", "BatchMatMulV2", types=_T, attrs=_BMM, arity=2), export=False)
_CONV = {"strides": ("ints", "strides", None), "padding": ("s", "padding", None),
         "data_format": ("s", "data_format", "NHWC"), "dilations": ("ints", "dilations", [1, 1, 1, 1]),
         "explicit_paddings": ("ints", None, []), "use_cudnn_on_gpu": ("b", None, True)}
for _op in ("Conv2D", "DepthwiseConv2dNative"):
    _add(OpMapping(_op, _op, types=_T, attrs=_CONV, arity=2))
_POOL = {"ksize": ("ints", "ksize", None), "strides": ("ints", "strides", None),
         "padding": ("s", "padding", None), "data_format": ("s", "data_format", "NHWC")}
_add(OpMapping("MaxPool", "MaxPool", types=_T, attrs={**_POOL, "explicit_paddings": ("ints", None, [])}))
_add(OpMapping("AvgPool", "AvgPool", types=_T, attrs=_POOL))
_add(OpMapping("Reshape", "Reshape", types={"T": "in0", "Tshape": "in1"}, arity=2))
_OUT_TYPE = {"out_type": ("type", "out_type", "int32")}
_add(OpMapping("Shape", "Shape", types=_T, attrs=_OUT_TYPE))
_add(OpMapping("Size", "Size", types=_T, attrs=_OUT_TYPE))
_add(OpMapping("Rank", "Rank", types=_T))
_add(OpMapping("Cast", "Cast", types={"SrcT": "in0"}, attrs={
    "SrcT": ("type", "SrcT", None), "DstT": ("type", "DstT", None),
    "Truncate": ("b", None, False)}))
_add(OpMapping("Fill", "Fill", types={"T": "in1", "index_type": "in0"}, arity=2))
_add(OpMapping("Range", "Range", attrs={"Tidx": ("type", "dtype", None)}, arity=3))
_add(OpMapping("Squeeze", "Squeeze", types=_T, attrs={"squeeze_dims": ("ints", "squeeze_dims", [])}))
_add(OpMapping("Pack", "Pack", types=_T, attrs={"axis": ("i", "axis", 0)}, list_input=True,
               private={"_kind": "stack"}))
_add(OpMapping("Assign", "Assign", types=_T, attrs={
    "validate_shape": ("b", "validate_shape", True), "use_locking": ("b", None, True)},
    arity=2))
_add(OpMapping("ApplyGradientDescent", "ApplyGradientDescent", types=_T,
               attrs={"use_locking": ("b", "use_locking", False)}, arity=3))
for _op in ("RandomStandardNormal", "RandomUniform", "TruncatedNormal"):
    _add(OpMapping(_op, _op, types={"T": "in0"}, attrs={
        "dtype": ("type", "dtype", None), "seed": ("i", "seed", 0), "seed2": ("i", "seed2", 0)}))
_add(OpMapping("RandomUniformInt", "RandomUniformInt", types={"T": "in0", "Tout": "in1"}, attrs={
    "seed": ("i", "seed", 0), "seed2": ("i", "seed2", 0)}, arity=3))


# ---- ops whose zmtf attrs are TF inputs ---------------------------------------------------------
def _int_const(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


def _ints(value: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(value).ravel()]


def _axis_to_const(attrs: dict[str, Any], inputs: list[Any]) -> np.ndarray:
    axis = attrs["axis"]
    if axis is None:
        rank = inputs[0].shape.ndims
        if rank is None:
            raise NotImplementedError("a reduction over all axes of a tensor of unknown rank "
                                      "(TF computes the axes at run time; zmtf exports only "
                                      "static axes)")
        return _int_const(list(range(rank)))
    return _int_const(list(axis))


def _axis_from_const(value: np.ndarray, attrs: dict[str, Any]) -> None:
    attrs["axis"] = tuple(_ints(value))


_REDUCE = (("reduction_indices", _axis_to_const, _axis_from_const, "axis"),)
for _op in ("Sum", "Mean", "Max", "Min", "Prod"):
    _add(OpMapping(_op, _op, types={"T": "in0", "Tidx": "idx"},
                   attrs={"keep_dims": ("b", "keep_dims", False)}, operands=_REDUCE))
for _op in ("All", "Any"):
    _add(OpMapping(_op, _op, types={"Tidx": "idx"}, attrs={"keep_dims": ("b", "keep_dims", False)},
                   operands=_REDUCE))


def _scalar_operand(name: str) -> tuple[str, Callable, Callable]:
    def to_const(attrs: dict[str, Any], inputs: list[Any]) -> np.ndarray:
        return np.asarray(attrs[name], np.int32)

    def from_const(value: np.ndarray, attrs: dict[str, Any]) -> None:
        if np.asarray(value).size != 1:
            raise ValueError(f"'{name}' must be a scalar, got shape {list(np.shape(value))}")
        attrs[name] = int(np.asarray(value).ravel()[0])
    return (name, to_const, from_const, name)


def _list_operand(tf_name: str, name: str) -> tuple[str, Callable, Callable]:
    def to_const(attrs: dict[str, Any], inputs: list[Any]) -> np.ndarray:
        return _int_const(attrs[name])

    def from_const(value: np.ndarray, attrs: dict[str, Any]) -> None:
        attrs[name] = np.asarray(value).astype(int).tolist()
    return (tf_name, to_const, from_const, name)


_add(OpMapping("ConcatV2", "ConcatV2", types={"T": "in0", "Tidx": "idx"}, list_input=True,
               operands=(("axis",) + _scalar_operand("axis")[1:],), private={"_kind": "concat"}))
_add(OpMapping("ExpandDims", "ExpandDims", types={"T": "in0", "Tdim": "idx"},
               operands=(("dim",) + _scalar_operand("axis")[1:],)))
_add(OpMapping("GatherV2", "GatherV2", types={"Tparams": "in0", "Tindices": "in1", "Taxis": "idx"},
               attrs={"batch_dims": ("i", None, 0)}, operands=(_scalar_operand("axis"),), arity=2))
for _op in ("ArgMax", "ArgMin"):
    _add(OpMapping(_op, _op, types={"T": "in0", "Tidx": "idx"},
                   attrs={"output_type": ("type", "output_type", "int64")},
                   operands=(("dimension",) + _scalar_operand("axis")[1:],)))
_add(OpMapping("Slice", "Slice", types={"T": "in0", "Index": "idx"},
               operands=(_list_operand("begin", "begin"), _list_operand("size", "size"))))
_add(OpMapping("SplitV", "SplitV", types={"T": "in0", "Tlen": "idx"},
               attrs={"num_split": ("i", "num_split", None)},
               operands=(_list_operand("size_splits", "sizes"),
                         ("split_dim",) + _scalar_operand("axis")[1:])))
_add(OpMapping("Tile", "Tile", types={"T": "in0", "Tmultiples": "idx"},
               operands=(_list_operand("multiples", "multiples"),)))


def _perm_to_const(attrs: dict[str, Any], inputs: list[Any]) -> np.ndarray:
    if attrs["perm"] is None:
        rank = inputs[0].shape.ndims
        if rank is None:
            raise NotImplementedError("tf.transpose without perm of a tensor of unknown rank "
                                      "(TF computes the perm at run time)")
        return _int_const(list(range(rank))[::-1])
    return _int_const(attrs["perm"])


_add(OpMapping("Transpose", "Transpose", types={"T": "in0", "Tperm": "idx"},
               operands=(("perm", _perm_to_const, _list_operand("perm", "perm")[2], "perm"),)))


def _pad_from_const(value: np.ndarray, attrs: dict[str, Any]) -> None:
    attrs["paddings"] = np.asarray(value).astype(int).tolist()
    attrs.setdefault("mode", "CONSTANT")
    attrs.setdefault("constant_values", 0.0)


def _constant_values_from(value: np.ndarray, attrs: dict[str, Any]) -> None:
    attrs["constant_values"] = float(np.asarray(value).ravel()[0])


_PADDINGS = ("paddings", lambda attrs, inputs: _int_const(attrs["paddings"]), _pad_from_const,
             "paddings")
_add(OpMapping("Pad", "Pad", types={"T": "in0", "Tpaddings": "idx"}, operands=(_PADDINGS,)))
_add(OpMapping("PadV2", "Pad", types={"T": "in0", "Tpaddings": "idx"}, operands=(
    _PADDINGS, ("constant_values", lambda attrs, inputs: np.asarray(
        attrs["constant_values"], inputs[0].dtype.np), _constant_values_from, "constant_values"))),
    export=False)
_add(OpMapping("MirrorPad", "Pad", types={"T": "in0", "Tpaddings": "idx"},
               attrs={"mode": ("s", "mode", None)}, operands=(_PADDINGS,)), export=False)


def pad_mapping(attrs: dict[str, Any]) -> OpMapping:
    """The TF op a zmtf Pad is: Pad, PadV2 (a constant that is not 0) or MirrorPad."""
    if attrs["mode"] != "CONSTANT":
        return TF_OPS["MirrorPad"]
    return TF_OPS["PadV2"] if attrs["constant_values"] != 0 else TF_OPS["Pad"]


# ---- StridedSlice: zmtf's spec <-> TF's begin/end/strides and masks ----------------------------
_add(OpMapping("StridedSlice", "StridedSlice", types={"T": "in0", "Index": "idx"},
               attrs={m: ("i", m, 0) for m in _MASKS},
               operands=tuple((n, None, None, "spec") for n in ("begin", "end", "strides"))))


# ---- Const, variables, OneHot, PlaceholderWithDefault: handled in code by the importer ----------
_add(OpMapping("Const", "Const", attrs={"dtype": ("type", "dtype", None)}, arity=0))
_add(OpMapping("VariableV2", "Variable", arity=0, attrs={
    "shape": ("shape", "shape", None), "dtype": ("type", "dtype", None),
    "container": ("s", "container", ""), "shared_name": ("s", None, "")}))
_add(OpMapping("OneHot", "OneHot", types={"TI": "in0"},
               attrs={"axis": ("i", "axis", -1), "T": ("type", "dtype", None)}, operands=(
                   ("depth",) + _scalar_operand("depth")[1:],
                   ("on_value", None, None, "on_value"), ("off_value", None, None, "off_value"))))
# ParseExample: its keys and defaults are inputs, one per feature (graph_def_parse_example.py)
_add(OpMapping("ParseExample", "ParseExample", list_input=True), export=False)
_add(OpMapping("PlaceholderWithDefault", "Identity",
               attrs={"dtype": ("type", None, None), "shape": ("shape", None, None)}),
     export=False)


__all__ = ["ExtraAttrs", "OpMapping", "TF_OPS", "ZMTF_OPS", "pad_mapping", "spec_to_strided_slice",
           "strided_slice_to_spec"]
