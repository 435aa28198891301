"""Implementation of tf.app, tf.logging and tf.gfile (TF's python/platform)."""
