"""Test-wide settings; must run before numba is first imported."""

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

pytest_plugins = ["zmtf.testing"]
