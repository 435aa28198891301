"""File formats through the public TF1 API: zmtf (and optionally an older zmtf tree) against
TensorFlow in the same run.

Why: issue 28 replaced zmtf's hand-written CRC-32C, PNG and WAV with libraries and asks that
TFRecord files and V2 checkpoints go at least as fast as TensorFlow 2.21. Runs minutes apart
on a shared 2-vCPU machine differ by more than the differences measured, so every side runs
in a process of its own, all up at once, and each repetition of a case goes round the sides
in turn (the side that goes first rotates with every case and repetition): drift hits every
side alike. Each call's CPU time (every thread of the side's process) is printed too.

Cases (each timed ``--reps`` times per side; the medians are printed):
- ``crc <size>``: CRC-32C of 100 B, 64 KiB, 1 MiB and 64 MiB (``zmtf.formats.crc32c``;
  TensorFlow has no public CRC function, so its column is empty), as µs per call and GB/s;
- ``tfrecord write``: 100,000 records of 100 B through ``tf.python_io.TFRecordWriter``;
- ``tfrecord read``: the same file through ``tf.python_io.tf_record_iterator``;
- ``tfrecord dataset``: the same file through ``tf.data.TFRecordDataset(...).batch(1000)``
  and a one-shot iterator in a graph session (TF: ``tf.compat.v1``, graph mode);
- ``tfrecord gzip``: as ``dataset``, the records in a GZIP file (``compression_type="GZIP"``);
- ``checkpoint save`` / ``restore``: 50 float32 variables of 1M elements (200 MB) with a V2
  ``tf.train.Saver`` (zmtf: ``write_version=SaverDef.V2``), meta graph written;
- ``png encode`` / ``decode``, ``jpeg encode`` / ``decode``: a 512x512 RGB image through
  ``tf.image.encode_png`` / ``decode_png`` / ``encode_jpeg`` / ``decode_jpeg`` in a session.
A side that cannot run a case (an older tree without a JPEG codec) shows "-". Before each
checkpoint case the driver syncs the file system (untimed): zmtf fsyncs a checkpoint before
renaming it into place and TF does not, so without it zmtf's fsync would also wait for the
200 MB that the side before it (TF) left dirty.

Sides: ``zmtf`` is the tree this file is in (or ``--new``), run with this Python;
``--base TREE`` adds an older zmtf tree (e.g. /work/main before the change) as ``base``;
``tf`` runs with ``--tf-python`` (default /work/tfvenv/bin/python) when that Python imports
tensorflow, else it is left out.

Run: python bench/formats.py [--reps 3] [--base /work/main] [--only crc,tfrecord,...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from _procs import Processes, commands, rotated, say  # bench/ is on sys.path; imports no zmtf

THIS = Path(__file__).resolve()
RECORDS, RECORD_BYTES = 100_000, 100
VARIABLES, VARIABLE_ELEMENTS = 50, 1_000_000        # 50 x 4 MB = 200 MB of float32
IMAGE_SIDE = 512
CRC_SIZES = {"100B": 100, "64KiB": 64 << 10, "1MiB": 1 << 20, "64MiB": 64 << 20}
CASES = ([f"crc {name}" for name in CRC_SIZES]
         + ["tfrecord write", "tfrecord read", "tfrecord dataset", "tfrecord gzip",
            "checkpoint save", "checkpoint restore",
            "png encode", "png decode", "jpeg encode", "jpeg decode"])
ANSWER_TIMEOUT = 600.0


# ---- the side processes -------------------------------------------------------------------
class Side:
    """One side's cases over ``tf`` (zmtf or TensorFlow's compat.v1), state built lazily."""

    def __init__(self, kind: str, folder: str) -> None:
        self.kind, self.folder = kind, folder
        if kind == "tf":
            import tensorflow as tensorflow
            self.tf = tensorflow.compat.v1
            self.tf2 = tensorflow
        else:
            import zmtf
            self.tf = zmtf
            self.tf2 = None
        self.record_path = os.path.join(folder, "records.tfrecord")
        self._checkpoint: tuple[Any, Any, Any, str] | None = None
        self._images: dict[str, Callable[[], Any]] | None = None

    def timed(self, case: str) -> dict[str, float]:
        """The case's seconds (as it measures them) and the CPU seconds this process spent
        on the whole call (every thread: TF's pools too), the figure to read under load."""
        cpu = time.process_time()
        seconds = self.run(case)
        return {"seconds": seconds, "cpu": time.process_time() - cpu}

    def run(self, case: str) -> float:
        group, what = case.split()
        if group == "crc":
            return self.crc(CRC_SIZES[what])
        return getattr(self, f"{group}_{what}")()

    def crc(self, size: int) -> float:
        if self.kind == "tf":
            raise NotImplementedError("TensorFlow has no public CRC-32C function")
        from zmtf.formats.crc32c import crc32c
        data = os.urandom(size)
        count = max(1, (32 << 20) // size)
        start = time.perf_counter()
        for _ in range(count):
            crc32c(data)
        return (time.perf_counter() - start) / count

    def tfrecord_write(self) -> float:
        record = os.urandom(RECORD_BYTES)
        writer_class = self.tf.python_io.TFRecordWriter
        start = time.perf_counter()
        with writer_class(self.record_path) as writer:
            for _ in range(RECORDS):
                writer.write(record)
        return time.perf_counter() - start

    def _records_file(self) -> None:
        if not os.path.exists(self.record_path):
            self.tfrecord_write()

    def tfrecord_read(self) -> float:
        self._records_file()
        iterate = self.tf.python_io.tf_record_iterator
        start = time.perf_counter()
        count = sum(1 for _ in iterate(self.record_path))
        elapsed = time.perf_counter() - start
        assert count == RECORDS, count
        return elapsed

    def tfrecord_dataset(self) -> float:
        self._records_file()
        return self._dataset(self.record_path, "")

    def tfrecord_gzip(self) -> float:
        """The same records in a GZIP file through TFRecordDataset(..., "GZIP").batch(1000)."""
        path = self.record_path + ".gz"
        if not os.path.exists(path):
            record = os.urandom(RECORD_BYTES)
            with self.tf.python_io.TFRecordWriter(path, "GZIP") as writer:
                for _ in range(RECORDS):
                    writer.write(record)
        return self._dataset(path, "GZIP")

    def _dataset(self, path: str, compression: str) -> float:
        tf = self.tf
        with tf.Graph().as_default():
            dataset = tf.data.TFRecordDataset(path, compression).batch(1000)
            batch = tf.data.make_one_shot_iterator(dataset).get_next() if self.kind == "tf" \
                else dataset.make_one_shot_iterator().get_next()
            with tf.Session() as sess:
                count = 0
                start = time.perf_counter()
                try:
                    while True:
                        count += len(sess.run(batch))
                except tf.errors.OutOfRangeError:
                    pass
                elapsed = time.perf_counter() - start
        assert count == RECORDS, count
        return elapsed

    def _saver(self) -> tuple[Any, Any, Any, str]:
        """(graph, session, saver, prefix); TF's Saver runs in its graph's context."""
        if self._checkpoint is None:
            tf = self.tf
            graph = tf.Graph()
            with graph.as_default():
                for i in range(VARIABLES):
                    tf.Variable(tf.random_normal([VARIABLE_ELEMENTS]), name=f"v{i}")
                saver = tf.train.Saver(write_version=tf.train.SaverDef.V2)
                sess = tf.Session(graph=graph)
                sess.run(tf.global_variables_initializer())
            self._checkpoint = (graph, sess, saver, os.path.join(self.folder, "model.ckpt"))
        return self._checkpoint

    def checkpoint_save(self) -> float:
        graph, sess, saver, prefix = self._saver()
        with graph.as_default():
            start = time.perf_counter()
            saver.save(sess, prefix)
            return time.perf_counter() - start

    def checkpoint_restore(self) -> float:
        graph, sess, saver, prefix = self._saver()
        with graph.as_default():
            if not os.path.exists(prefix + ".index"):
                saver.save(sess, prefix)
            start = time.perf_counter()
            saver.restore(sess, prefix)
            return time.perf_counter() - start

    def _image_ops(self) -> dict[str, Callable[[], Any]]:
        """One session, four ops: each case feeds the same 512x512 RGB photo-like image."""
        if self._images is None:
            import numpy as np
            tf = self.tf
            y, x = np.mgrid[0:IMAGE_SIDE, 0:IMAGE_SIDE]
            noise = np.random.default_rng(28).integers(0, 24, (IMAGE_SIDE, IMAGE_SIDE, 3))
            image = (np.stack([x / 2, y / 2, (x + y) / 4], axis=-1) + noise).astype(np.uint8)
            graph = tf.Graph()
            with graph.as_default():
                pixels = tf.placeholder(tf.uint8, [None, None, 3])
                contents = tf.placeholder(tf.string, [])
                encode_png, encode_jpeg = tf.image.encode_png(pixels), None
                decode_png, decode_jpeg = tf.image.decode_png(contents), None
                try:
                    encode_jpeg = tf.image.encode_jpeg(pixels, quality=90)
                    decode_jpeg = tf.image.decode_jpeg(contents)
                except Exception:   # an older zmtf: no JPEG codec
                    pass
            sess = tf.Session(graph=graph)
            png = sess.run(encode_png, {pixels: image})
            jpeg = sess.run(encode_jpeg, {pixels: image}) if encode_jpeg is not None else None

            def runner(op: Any, feeds: dict) -> Callable[[], Any]:
                if op is None:
                    return lambda: (_ for _ in ()).throw(NotImplementedError("no JPEG codec"))
                return lambda: sess.run(op, feeds)

            self._images = {"png encode": runner(encode_png, {pixels: image}),
                            "png decode": runner(decode_png, {contents: png}),
                            "jpeg encode": runner(encode_jpeg, {pixels: image}),
                            "jpeg decode": runner(decode_jpeg, {contents: jpeg})}
        return self._images

    def _image_case(self, name: str) -> float:
        run = self._image_ops()[name]
        run()   # untimed: the first run of an op builds its kernels
        count = 10
        start = time.perf_counter()
        for _ in range(count):
            run()
        return (time.perf_counter() - start) / count

    def png_encode(self) -> float:
        return self._image_case("png encode")

    def png_decode(self) -> float:
        return self._image_case("png decode")

    def jpeg_encode(self) -> float:
        return self._image_case("jpeg encode")

    def jpeg_decode(self) -> float:
        return self._image_case("jpeg decode")


def side_main(kind: str) -> None:
    """A side process: answers ``case <group> <what>`` lines with the seconds it took."""
    folder = tempfile.mkdtemp(prefix=f"formats-{kind}-")
    try:
        side = Side(kind, folder)
        say("ready")
        for words in commands():
            case = " ".join(words[1:])
            try:
                say(side.timed(case))
            except Exception as error:   # this side cannot run the case: "-" in the table
                say({"error": f"{type(error).__name__}: {error}"[:200]})
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---- the driver ---------------------------------------------------------------------------
def _tf_works(python: str) -> bool:
    if not os.path.exists(python):
        return False
    probe = subprocess.run([python, "-c", "import tensorflow"], capture_output=True,
                           timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return probe.returncode == 0


def _figure(case: str, seconds: float | None) -> str:
    if seconds is None:
        return "-"
    group, what = case.split()
    if group == "crc":
        return f"{seconds * 1e6:9.2f} µs {CRC_SIZES[what] / seconds / 1e9:6.2f} GB/s"
    if group == "tfrecord":
        mb = RECORDS * (RECORD_BYTES + 16) / 1e6
        return f"{seconds * 1e3:8.1f} ms {mb / seconds:6.0f} MB/s"
    if group == "checkpoint":
        return f"{seconds * 1e3:8.1f} ms {VARIABLES * VARIABLE_ELEMENTS * 4 / seconds / 1e6:6.0f} MB/s"
    return f"{seconds * 1e3:8.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--new", default=str(THIS.parents[1]), help="the zmtf tree measured")
    parser.add_argument("--base", help="an older zmtf tree to compare with (before/after)")
    parser.add_argument("--tf-python", default="/work/tfvenv/bin/python")
    parser.add_argument("--only", help="comma-separated groups: crc,tfrecord,checkpoint,png,jpeg")
    parser.add_argument("--side", help=argparse.SUPPRESS)   # internal: run as a side process
    args = parser.parse_args()
    if args.side:
        side_main(args.side)
        return
    cases = [c for c in CASES if not args.only or c.split()[0] in args.only.split(",")]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "NUMBA_THREADING_LAYER": "threadsafe",
           "OMP_WAIT_POLICY": "passive", "CUDA_VISIBLE_DEVICES": ""}
    sides: dict[str, tuple[str, str, str | None]] = {"zmtf": ("zmtf", sys.executable, args.new)}
    if args.base:
        sides["base"] = ("zmtf", sys.executable, args.base)
    if _tf_works(args.tf_python):
        sides["tf"] = ("tf", args.tf_python, None)
    else:
        print(f"(no TensorFlow at {args.tf_python}: its column is left out)")
    procs = Processes(THIS.parent)
    try:
        clients = {}
        for label, (kind, python, tree) in sides.items():
            side_env = dict(env)
            if tree:
                side_env["PYTHONPATH"] = tree
            clients[label] = procs.client(label, [python, str(THIS), "--side", kind],
                                          env=side_env)
        for client in clients.values():
            client.wait_ready(ANSWER_TIMEOUT)
        samples: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        errors: dict[tuple[str, str], str] = {}
        for rep in range(args.reps):
            for index, case in enumerate(cases):
                # the first side rotates with every case, not only every rep: rotating per rep
                # alone puts each side right after the same other side every time
                for label in rotated(list(clients), rep + index):
                    if case.startswith("checkpoint"):
                        os.sync()   # no side's fsync waits on the dirty pages of another's save
                    clients[label].send("case " + case)
                    answer = clients[label].receive(ANSWER_TIMEOUT)
                    if "seconds" in answer:
                        samples.setdefault((label, case), []).append(answer["seconds"])
                        cpu.setdefault((label, case), []).append(answer["cpu"])
                    else:
                        errors[(label, case)] = answer["error"]
        _report(cases, list(clients), samples, args.reps)
        _report_cpu(cases, list(clients), cpu)
        for (label, case), error in errors.items():
            print(f"  ({label} cannot run '{case}': {error})")
    finally:
        procs.stop_all()


def _report(cases: list[str], labels: list[str], samples: dict, reps: int) -> None:
    print(f"medians of {reps}; every side in its own process, interleaved; "
          f"{os.cpu_count()} CPUs")
    width = 30
    print(f"{'case':20}" + "".join(f"{label:>{width}}" for label in labels)
          + ("   zmtf/tf speed" if "tf" in labels else ""))
    for case in cases:
        medians = {label: statistics.median(samples[(label, case)])
                   if (label, case) in samples else None for label in labels}
        line = f"{case:20}" + "".join(f"{_figure(case, medians[label]):>{width}}"
                                      for label in labels)
        if medians.get("tf") and medians.get("zmtf"):
            line += f"   {medians['tf'] / medians['zmtf']:6.2f}x"
        print(line)
    print(json.dumps({f"{label}|{case}": statistics.median(values)
                      for (label, case), values in samples.items()}))


def _report_cpu(cases: list[str], labels: list[str], cpu: dict) -> None:
    """CPU ms per call (median), for the cases timed once per call (file formats): on a
    loaded machine wall time mostly measures the wait for a core."""
    print("CPU time of the side's process per call (median ms; all its threads)")
    for case in cases:
        if case.split()[0] not in ("tfrecord", "checkpoint"):
            continue
        medians = {label: statistics.median(cpu[(label, case)]) * 1e3
                   for label in labels if (label, case) in cpu}
        line = f"{case:20}" + "".join(f"{medians[label]:>{30}.1f}" if label in medians
                                      else f"{'-':>30}" for label in labels)
        if medians.get("tf") and medians.get("zmtf"):
            line += f"   {medians['tf'] / medians['zmtf']:6.2f}x"
        print(line)
    for case in cases:   # a checkpoint's first call builds the variables; later ones can fault
        if case.startswith("checkpoint"):
            print(f"  {case}, CPU ms per rep: " + "; ".join(
                f"{label} " + " ".join(f"{v * 1e3:.0f}" for v in cpu[(label, case)])
                for label in labels if (label, case) in cpu))


if __name__ == "__main__":
    main()
