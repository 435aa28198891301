"""TensorFlow's QueueRunnerDef (queue_runner.proto), with TF's field numbers: what
``QueueRunner.to_proto()`` returns and ``QueueRunner.from_proto()`` reads, by op names."""

from __future__ import annotations

from zmtf.formats.proto_message import Field, Message

#: tensorflow.error.Code's names, for the queue_closed_exception_types enum
ERROR_CODE_NAMES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT",
                    4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND", 6: "ALREADY_EXISTS",
                    7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
                    10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL",
                    14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED"}


class QueueRunnerDef(Message):
    """A queue runner by names: its queue, enqueue ops, close and cancel ops, and the error
    codes that mean "the queue closed" (a clean end of a loop)."""

    FIELDS = (Field(1, "queue_name", "string"),
              Field(2, "enqueue_op_name", "string", repeated=True),
              Field(3, "close_op_name", "string"),
              Field(4, "cancel_op_name", "string"),
              Field(5, "queue_closed_exception_types", "enum", repeated=True,
                    names=ERROR_CODE_NAMES))
    queue_name: str
    enqueue_op_name: list[str]
    close_op_name: str
    cancel_op_name: str
    queue_closed_exception_types: list[int]


__all__ = ["QueueRunnerDef"]
