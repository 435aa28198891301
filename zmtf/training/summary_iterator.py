"""tf.train.summary_iterator: the Events of a TensorBoard event file, in order::

    for event in tf.train.summary_iterator(path):
        for value in event.summary.value:   # empty unless event.HasField("summary")
            print(event.step, value.tag, value.simple_value)

Records are checked (CRC, framing: DataLossError naming the file and offset), then parsed
by formats/event_proto.py.
"""

from __future__ import annotations

import os
from typing import Iterator

from zmtf.formats.event_proto import Event, parse_event
from zmtf.formats.tfrecord import tf_record_iterator


def summary_iterator(path: str | os.PathLike) -> Iterator[Event]:
    name = os.fspath(path)
    for k, record in enumerate(tf_record_iterator(name)):
        yield parse_event(record, f"{name} record {k}")
