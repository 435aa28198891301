"""``tf.contrib.training``: of TF 1.15's module, the hyperparameter container (HParams and
its string grammar, parse_values) and the greedy ps load balancing of replica_device_setter
(GreedyLoadBalancingStrategy, byte_size_load_fn). Other names are an AttributeError that says so."""

from __future__ import annotations

from typing import Any

from zmtf.contrib.hparam import HParams, parse_values
from zmtf.training.device_setter import GreedyLoadBalancingStrategy, byte_size_load_fn

__all__ = ["GreedyLoadBalancingStrategy", "HParams", "byte_size_load_fn", "parse_values"]


def __getattr__(name: str) -> Any:
    raise AttributeError(f"tf.contrib.training.{name} is not in zmtf: of tf.contrib.training, "
                         f"zmtf has only {', '.join(__all__)} (docs/supported.md lists what is built)")
