"""The versions a script may ask for (TF's python/framework/versions.py).

``tf.__version__`` and ``tf.VERSION`` are the TF1 release whose API zmtf follows, because
TF1 scripts compare them (``tf.__version__.startswith("1.")``, ``LooseVersion(tf.VERSION) >=
"1.4"``) to choose which API to call; 1.15.5 is TF1's last release. zmtf's own version (its
package version, pyproject.toml's) is ``zmtf.ZMTF_VERSION``, and ``tf.GIT_VERSION`` names
both, as TF's names the build ("v1.15.5-zmtf-0.1.0").
"""

from __future__ import annotations

import sys

TF_VERSION = "1.15.5"      #: the TF1 release zmtf's API follows
ZMTF_VERSION = "0.1.0"     #: zmtf's own (pyproject.toml's version; a test keeps them equal)

VERSION = __version__ = TF_VERSION
GIT_VERSION = f"v{TF_VERSION}-zmtf-{ZMTF_VERSION}"
COMPILER_VERSION = f"Python {sys.version.split()[0]} / numba"

__all__ = ["COMPILER_VERSION", "GIT_VERSION", "TF_VERSION", "VERSION", "ZMTF_VERSION"]
