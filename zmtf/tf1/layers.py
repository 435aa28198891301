"""``tf.layers``: re-exported from ``zmtf.ops.layers``, where it is implemented."""

from zmtf.ops.layers import *  # noqa: F401,F403
from zmtf.ops.layers import __all__  # noqa: F401
