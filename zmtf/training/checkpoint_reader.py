"""Reading a checkpoint without a graph: tf.train.NewCheckpointReader, list_variables and
load_variable, as TF1 scripts use them to inspect or warm-start from a saved model; zmtf's
checkpoints and TensorFlow's V2 ones alike."""

from __future__ import annotations

import os
import zipfile
from typing import Any

import numpy as np

from zmtf.framework.errors import DataLossError, NotFoundError
from zmtf.training.saver import _data_path, _read_checkpoint, latest_checkpoint
from zmtf.training.tensor_bundle import BundleReader, is_bundle, numpy_dtype


def _prefix(path: str | os.PathLike) -> str:
    """A checkpoint prefix, or the newest one when ``path`` is the folder holding them."""
    path = os.fspath(path)
    if os.path.isdir(path):
        newest = latest_checkpoint(path)
        if newest is None:
            raise NotFoundError(None, None, f"no checkpoint in folder {path} (no 'checkpoint' file "
                                            f"naming one)")
        return newest
    return path


class CheckpointReader:
    """``tf.train.NewCheckpointReader(prefix)``: the saved arrays by variable name, from
    zmtf's ``P.npz`` or from TensorFlow's V2 checkpoint ``P.index`` + ``P.data-*``."""

    def __init__(self, path: str | os.PathLike) -> None:
        self._prefix = _prefix(path)
        data = _data_path(self._prefix)
        self._bundle: BundleReader | None = None
        if not os.path.isfile(data) and is_bundle(self._prefix):
            self._bundle = BundleReader(self._prefix)
            self._shapes = {name: (list(entry.shape), entry.dtype)
                            for name, entry in self._bundle.entries.items()}
            return
        try:
            with np.load(data, allow_pickle=False) as archive:
                self._shapes = {name: (list(archive[name].shape), archive[name].dtype)
                                for name in archive.files}
        except FileNotFoundError:
            raise NotFoundError(None, None, f"Unsuccessful TensorSliceReader constructor: Failed to "
                                            f"find any matching files for {self._prefix}") from None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
            raise DataLossError(None, None, f"Unable to read checkpoint {data}: {error}") from error

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {name: list(shape) for name, (shape, _) in self._shapes.items()}

    def get_variable_to_dtype_map(self) -> dict[str, Any]:
        from zmtf.framework.dtypes import as_dtype

        if self._bundle is not None:
            return {name: as_dtype(numpy_dtype(dt)) for name, (_, dt) in self._shapes.items()}
        return {name: as_dtype(dtype) for name, (_, dtype) in self._shapes.items()}

    def has_tensor(self, name: str) -> bool:
        return name in self._shapes

    def get_tensor(self, name: str) -> np.ndarray:
        if name not in self._shapes:
            raise NotFoundError(None, None, f"Key {name} not found in checkpoint {self._prefix}")
        if self._bundle is not None:
            return self._bundle.tensor(name)
        return _read_checkpoint(self._prefix, [name])[name]

    def debug_string(self) -> bytes:
        if self._bundle is not None:
            return self._bundle.debug_string()
        return "".join(f"{n} ({d}) {s}\n" for n, (s, d) in sorted(self._shapes.items())).encode()


def NewCheckpointReader(filepattern: str | os.PathLike) -> CheckpointReader:  # noqa: N802 (TF's name)
    return CheckpointReader(filepattern)


def list_variables(ckpt_dir_or_file: str | os.PathLike) -> list[tuple[str, list[int]]]:
    """[(name, shape)] of every variable in the checkpoint, sorted by name."""
    return sorted(CheckpointReader(ckpt_dir_or_file).get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file: str | os.PathLike, name: str) -> np.ndarray:
    """One saved variable's value ("name" or "name:0")."""
    return CheckpointReader(ckpt_dir_or_file).get_tensor(name[:-2] if name.endswith(":0") else name)


__all__ = ["CheckpointReader", "NewCheckpointReader", "list_variables", "load_variable"]
