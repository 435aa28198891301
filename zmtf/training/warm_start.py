"""``tf.train.init_from_checkpoint``: start variables from a checkpoint instead of their
initializers (fine-tuning, warm starts).

It replaces the initializer of each mapped variable, so it must run before
``global_variables_initializer()`` is built, as in TF. The saved value becomes a constant
of the graph (TF reads the file when the initializer runs; the effect is the same unless
the checkpoint changes between building the graph and initializing).
"""

from __future__ import annotations

import os
from typing import Any

from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.ops import state_ops
from zmtf.ops.constant_op import constant
from zmtf.ops.variable_scope import PartitionedVariable
from zmtf.ops.variables import Variable
from zmtf.training.checkpoint_reader import CheckpointReader


def init_from_checkpoint(ckpt_dir_or_file: str | os.PathLike, assignment_map: dict[str, Any]) -> None:
    """TF1's forms of ``assignment_map``:

    * ``{"old_scope/": "new_scope/"}``: every variable under new_scope/ from old_scope/ + the
      rest of its name (``"/"`` on either side means the top level);
    * ``{"old_scope/w": "new_scope/w"}``: one variable by name;
    * ``{"old_scope/w": variable}``: one variable object.
    A name missing on either side, or a shape that differs, is a ValueError naming both.
    """
    reader = CheckpointReader(ckpt_dir_or_file)
    saved = reader.get_variable_to_shape_map()
    graph = get_default_graph()
    variables = {v.op.name: v for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES)
                 for v in graph.get_collection(key) if isinstance(v, Variable)}
    for saved_name, target in assignment_map.items():
        if isinstance(target, (Variable, PartitionedVariable, list)):
            _init_from(reader, saved, _single(target, saved_name), _strip(saved_name))
        elif saved_name.endswith("/") or saved_name == "/":
            if not str(target).endswith("/") and target != "/":
                raise ValueError(f"Assignment map with scope only name {saved_name} should map "
                                 f"to scope only {target}. Should be 'scope/': 'other_scope/'.")
            saved_scope = "" if saved_name == "/" else saved_name
            scope = "" if target == "/" else str(target)
            mapped = [name for name in sorted(variables) if name.startswith(scope)]
            if not mapped:
                raise ValueError(f"init_from_checkpoint: no variable of this graph is under "
                                 f"'{scope}' (mapped from '{saved_name}')")
            for name in mapped:
                _init_from(reader, saved, variables[name], saved_scope + name[len(scope):])
        else:
            name = _strip(str(target))
            if name not in variables:
                raise ValueError(f"init_from_checkpoint: tensor {target} is not found in the graph "
                                 f"(mapped from checkpoint tensor {saved_name})")
            _init_from(reader, saved, variables[name], _strip(saved_name))


def _strip(name: str) -> str:
    return name[:-2] if name.endswith(":0") else name


def _single(target: Any, saved_name: str) -> Variable:
    if isinstance(target, Variable):
        return target
    raise ValueError(f"init_from_checkpoint: '{saved_name}' maps to a partitioned variable; zmtf "
                     f"warm-starts whole variables only: map each shard's name instead")


def _init_from(reader: CheckpointReader, saved: dict[str, list[int]], variable: Variable,
               saved_name: str) -> None:
    if saved_name not in saved:
        raise ValueError(f"init_from_checkpoint: tensor {saved_name} (for variable {variable.op.name}) "
                         f"is not found in the checkpoint")
    shape = variable.shape.as_list()
    if shape != list(saved[saved_name]):
        raise ValueError(f"Shape of variable {variable.name} ({shape}) doesn't match with shape of "
                         f"tensor {saved_name} ({saved[saved_name]}) from checkpoint reader.")
    value = reader.get_tensor(saved_name).astype(variable.dtype.as_numpy_dtype, copy=False)
    graph = variable.graph
    with graph.name_scope(None), graph.name_scope(f"{variable.op.name}/"), \
            graph.colocate_with(variable.op):
        initial = constant(value, dtype=variable.dtype, name="checkpoint_initializer")
        variable._initializer = state_ops.assign(variable._variable, initial).op
    variable._initial_value = initial
