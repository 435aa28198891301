"""``tf.app``: re-exported from ``zmtf.platform.app``, where it is implemented."""

from zmtf.platform.app import *  # noqa: F401,F403
from zmtf.platform.app import __all__  # noqa: F401
