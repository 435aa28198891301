"""ResourceContainer: where variables, queues, accumulators, iterators, readers and lookup
tables live between steps.

One container per local session, or per worker (shared by every session on that task, so
two workers' graphs that name the same ``shared_name`` meet in the same queue on a ps), plus
one per session that asked for ``isolate_session_state`` (``isolated``).

TF's named containers (``with tf.container("c0")``) live inside it: a variable of container
"c0" is stored under "c0:<name>" (":" is in no op name), one of the default container (its
job's name, as in TF) under its plain name; ``clear_containers`` drops the named ones.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from zmtf.framework.errors import CancelledError, FailedPreconditionError, InvalidArgumentError
from zmtf.runtime.accumulator import ConditionalAccumulator
from zmtf.runtime import dataset_reduce
from zmtf.runtime.dataset_iterator import DatasetIterator
from zmtf.runtime.fifo_queue import FIFOQueue
from zmtf.runtime.file_access import UNLIMITED, FileAccess
from zmtf.runtime.file_readers import FileReader
from zmtf.runtime.lookup_tables import LookupTable
from zmtf.runtime.padding_queue import PaddingFIFOQueue
from zmtf.runtime.record_formats import Format, Record, format_for
from zmtf.runtime.shuffle_queue import RandomShuffleQueue

#: imported for the kernels they register (ReduceDataset runs a pipeline, as an iterator does)
_KERNEL_MODULES = (dataset_reduce,)


class VariableLock:
    """A variable's lock that counts how often it was taken and given back: ``version`` is
    odd while a kernel holds it. Every kernel that writes a stored array in place does so
    under it, so two equal even readings taken outside it, one before and one after a copy,
    prove the copy saw one unchanged value (a seqlock). The shared-memory sender relies on
    this to resend a big variable's segment without copying it again
    (``stored_version``)."""

    __slots__ = ("_lock", "version")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version = 0   # changed only by the holder: right after taking, right before giving

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        taken = self._lock.acquire(blocking, timeout)
        if taken:
            self.version += 1
        return taken

    def release(self) -> None:
        self.version += 1
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


#: stored arrays this big are tracked by ``stored_version`` (smaller ones are never resent
#: from a cache: distributed/shared_memory.THRESHOLD)
VERSIONED_BYTES = 1 << 20
# id() of a big stored array -> (the array, weakly; its variable's lock)
_versioned: dict[int, tuple[weakref.ref[np.ndarray], VariableLock]] = {}


def stored_version(array: object) -> int | None:
    """How often the variable that stores ``array`` itself was locked for writing, when it is
    not locked now; None for any other array (not a big stored one, or being written).
    Equal values at two moments mean the array's contents did not change in between."""
    entry = _versioned.get(id(array))
    if entry is None or entry[0]() is not array:
        return None
    version = entry[1].version
    return None if version & 1 else version


def _track(value: np.ndarray, lock: VariableLock) -> None:
    key = id(value)

    def forget(ref: weakref.ref[np.ndarray]) -> None:
        entry = _versioned.get(key)
        if entry is not None and entry[0] is ref:
            del _versioned[key]

    _versioned[key] = (weakref.ref(value, forget), lock)


def _untrack(value: np.ndarray) -> None:
    entry = _versioned.get(id(value))
    if entry is not None and entry[0]() is value:
        del _versioned[id(value)]


class ResourceContainer:
    """Variable name -> current value, with a lock per variable for read-modify-write ops."""

    def __init__(self, default_container: str = "localhost",
                 storage_ids: set[int] | None = None) -> None:
        #: variable name -> its stored array; read it freely (VariableRef reads it directly in
        #: every step), change it only through assign/clear, which keep ``holds`` right
        self.values: dict[str, np.ndarray] = {}
        #: the name of the container that ops with container "" use: the task's job (TF)
        self.default_container = default_container
        # id() of every stored array, see holds(); shared with the isolated containers made
        # from this one, so that one check covers every session's variables
        self._storage_ids: set[int] = set() if storage_ids is None else storage_ids
        self._locks: dict[str, VariableLock] = {}
        self._mutex = threading.Lock()
        #: shared name -> queue, accumulator or iterator (anything with ``cancel_all(error)``)
        self._shared: dict[str, Any] = {}
        #: where this container's kernels may touch files (a server's file_root); kept by clear()
        self.files: FileAccess = UNLIMITED

    def isolated(self) -> ResourceContainer:
        """An empty container for one session's private state (isolate_session_state), with
        this one's file policy and default container name."""
        private = ResourceContainer(self.default_container, self._storage_ids)
        private.files = self.files
        return private

    def key(self, container: str, name: str) -> str:
        """Where a resource ``name`` of ``container`` (an op's attr; "" is the default) is kept."""
        return name if not container or container == self.default_container else f"{container}:{name}"

    def _container_of(self, key: str) -> str:
        container, sep, _ = key.partition(":")
        return container if sep else self.default_container

    def read(self, name: str) -> np.ndarray:
        try:
            return self.values[name]
        except KeyError:
            shown = name.rpartition(":")[2]
            raise FailedPreconditionError(
                None, None,
                f"Attempting to use uninitialized value {shown}: run "
                f"sess.run(tf.global_variables_initializer()) (or {shown}.initializer) in this "
                f"session before reading it.", node_name=shown) from None

    def assign(self, name: str, value: np.ndarray) -> None:
        old = self.values.get(name)
        self.values[name] = value
        self._storage_ids.add(id(value))
        if old is not None and old is not value:
            self._storage_ids.discard(id(old))
            if type(old) is np.ndarray and old.nbytes >= VERSIONED_BYTES:
                _untrack(old)
        if type(value) is np.ndarray and value.nbytes >= VERSIONED_BYTES:
            _track(value, self.lock(name))

    def holds(self, array: object) -> bool:
        """Whether ``array`` is (a view of) a stored value: reads alias storage, fetches must copy."""
        while array is not None:
            if id(array) in self._storage_ids:
                return True
            array = getattr(array, "base", None)
        return False

    def is_initialized(self, name: str) -> bool:
        return name in self.values

    def lock(self, name: str) -> VariableLock:
        lock = self._locks.get(name)
        if lock is None:
            with self._mutex:
                lock = self._locks.setdefault(name, VariableLock())
        return lock

    def names(self) -> list[str]:
        return sorted(self.values)

    def fifo_queue(self, name: str, dtypes: Sequence[str], shapes: Sequence[Any] | None,
                   capacity: int, node_name: str, padding: bool = False) -> FIFOQueue:
        """The queue shared as ``name`` (a PaddingFIFOQueue if ``padding``), made on first
        use; a later op must ask for the same."""
        kind = PaddingFIFOQueue if padding else FIFOQueue
        queue = self._lookup_or_create(
            name, kind, lambda: kind(name, dtypes, shapes, capacity), node_name)
        if type(queue) is not kind:
            raise InvalidArgumentError(
                f"shared_name '{name}' of node '{node_name}' names a {type(queue).__name__} "
                f"on this device, not a {kind.__name__}; give one of them another shared_name")
        queue.check_matches(dtypes, shapes, capacity, node_name)
        return queue

    def shuffle_queue(self, name: str, dtypes: Sequence[str], shapes: Sequence[Any] | None,
                      capacity: int, min_after_dequeue: int, seeds: tuple[int, int],
                      node_name: str) -> RandomShuffleQueue:
        """The RandomShuffleQueue shared as ``name``, made on first use."""
        queue = self._lookup_or_create(name, RandomShuffleQueue, lambda: RandomShuffleQueue(
            name, dtypes, shapes, capacity, min_after_dequeue, *seeds), node_name)
        queue.check_matches(dtypes, shapes, capacity, node_name, min_after_dequeue=min_after_dequeue)
        return queue

    def accumulator(self, name: str, dtype: str, shape: Sequence[int | None] | None,
                    node_name: str) -> ConditionalAccumulator:
        """The accumulator shared as ``name``, made on first use."""
        accumulator = self._lookup_or_create(
            name, ConditionalAccumulator, lambda: ConditionalAccumulator(name, dtype, shape),
            node_name)
        accumulator.check_matches(dtype, node_name)
        return accumulator

    def iterator(self, name: str, node_name: str) -> DatasetIterator:
        """The tf.data iterator state named ``name``, made (not started) on first use."""
        return self._lookup_or_create(name, DatasetIterator, lambda: DatasetIterator(name), node_name)

    def reader(self, name: str, op_type: str, attrs: dict[str, Any], node_name: str) -> FileReader:
        """The reader state named ``name`` (a TFRecordReaderV2, ... op), made on first use."""
        reader = self._lookup_or_create(
            name, FileReader, lambda: FileReader(name, op_type, self._confined(
                format_for(op_type, attrs), op_type, node_name)), node_name)
        if reader.op_type != op_type:
            raise InvalidArgumentError(
                f"shared_name '{name}' of node '{node_name}' ({op_type}) names a "
                f"{reader.op_type} reader on this device; give one of them another shared_name")
        return reader

    def _confined(self, records: Format, op_type: str, node_name: str) -> Format:
        """A file reader's format, opening only what ``files`` allows (checked when the file
        is first read, so a refusal fails that read as a missing file would)."""
        if op_type == "IdentityReaderV2" or self.files.root is None:
            return records   # its work items are not file names
        files = self.files

        def confined(filename: bytes) -> Iterator[Record]:
            yield from records(os.fsencode(files.check(filename, node_name)))

        return confined

    def lookup_table(self, name: str, key_dtype: str, value_dtype: str,
                     value_shape: tuple[int, ...], mutable: bool, node_name: str) -> LookupTable:
        """The lookup table shared as ``name``, made (empty) on first use."""
        table = self._lookup_or_create(name, LookupTable, lambda: LookupTable(
            name, key_dtype, value_dtype, value_shape, mutable), node_name)
        table.check_matches(key_dtype, value_dtype, node_name)
        return table

    def _lookup_or_create(self, name: str, kind: type, create: Callable[[], Any],
                          node_name: str) -> Any:
        resource = self._shared.get(name)
        if resource is None:
            with self._mutex:
                resource = self._shared.get(name)
                if resource is None:
                    resource = self._shared[name] = create()
        if not isinstance(resource, kind):
            raise InvalidArgumentError(
                f"shared_name '{name}' of node '{node_name}' names a {type(resource).__name__} "
                f"on this device, not a {kind.__name__}; give one of them another shared_name")
        return resource

    def cancel_waiters(self, reason: str) -> None:
        """Release every op blocked on a queue or accumulator with CancelledError(reason)."""
        with self._mutex:
            resources = list(self._shared.values())
        for resource in resources:
            resource.cancel_all(CancelledError(None, None, reason))

    def clear(self) -> None:
        """Drop every value and shared resource (tf.Session.reset); blocked ops are cancelled."""
        self.clear_containers(None)

    def clear_containers(self, containers: list[str] | None) -> None:
        """Drop what the named containers hold (all of them for None): TF's
        ``Session.reset(target, containers)``. Queues, readers, tables and iterators live in
        the default container; ops blocked on them are cancelled."""
        names = None if containers is None else set(containers)
        if names is None or self.default_container in names:
            self.cancel_waiters("the resource container was reset (tf.Session.reset); "
                                "re-create the queues and accumulators by running their ops again")
            with self._mutex:
                self._shared.clear()
        with self._mutex:
            for key in [k for k in self.values if names is None or self._container_of(k) in names]:
                self._storage_ids.discard(id(self.values.pop(key)))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.values)
