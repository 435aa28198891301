"""TensorFlow's DataType enum names (``DT_FLOAT`` = 1, ...): the default names of an enum field.

proto_message.py builds TF's DataType enum (types.proto) from them, and graph_def_proto.py
names dtypes in errors with them.
"""

from __future__ import annotations

DATA_TYPE_NAMES: dict[int, str] = {
    0: "DT_INVALID", 1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 5: "DT_INT16",
    6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64", 10: "DT_BOOL",
    11: "DT_QINT8", 12: "DT_QUINT8", 13: "DT_QINT32", 14: "DT_BFLOAT16", 15: "DT_QINT16",
    16: "DT_QUINT16", 17: "DT_UINT16", 18: "DT_COMPLEX128", 19: "DT_HALF", 20: "DT_RESOURCE",
    21: "DT_VARIANT", 22: "DT_UINT32", 23: "DT_UINT64",
}
DATA_TYPE_NAMES.update({k + 100: v + "_REF" for k, v in list(DATA_TYPE_NAMES.items()) if k})


__all__ = ["DATA_TYPE_NAMES"]
