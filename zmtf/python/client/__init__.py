"""``tensorflow.python.client``: ``timeline`` and ``device_lib``."""
