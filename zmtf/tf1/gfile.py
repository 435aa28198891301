"""``tf.gfile``: re-exported from ``zmtf.platform.gfile``, where it is implemented."""

from zmtf.platform.gfile import *  # noqa: F401,F403
from zmtf.platform.gfile import __all__  # noqa: F401
