"""``from tensorflow.python.client import timeline``: ``timeline.Timeline(step_stats)``."""

from zmtf.training.timeline import Timeline

__all__ = ["Timeline"]
