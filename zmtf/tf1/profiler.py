"""``tf.profiler``: re-exported from ``zmtf.interop.profiler``, where it is implemented."""

from zmtf.interop.profiler import *  # noqa: F401,F403
from zmtf.interop.profiler import __all__  # noqa: F401
