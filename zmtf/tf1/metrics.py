"""``tf.metrics``: re-exported from ``zmtf.ops.metrics_impl``, where it is implemented."""

from zmtf.ops.metrics_impl import *  # noqa: F401,F403
from zmtf.ops.metrics_impl import __all__  # noqa: F401
