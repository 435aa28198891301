"""TF1's ``tensorflow.python`` import paths that TF1 code uses directly (``python.client``)."""
