"""``tf.logging``: re-exported from ``zmtf.platform.logging``, where it is implemented."""

from zmtf.platform.logging import *  # noqa: F401,F403
from zmtf.platform.logging import __all__  # noqa: F401
