"""``tf.train``: training utilities (the cluster parts arrive with the cluster runtime)."""
