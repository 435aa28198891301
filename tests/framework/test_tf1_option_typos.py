"""TF1's option messages refuse a misspelled field, as protobuf messages do: a typo in
``config.log_device_placment = True`` must fail loudly, not configure nothing."""

from __future__ import annotations

import pytest

import zmtf as tf


@pytest.mark.parametrize("make, typo", [
    (tf.ConfigProto, "log_device_placment"),
    (tf.RunOptions, "trace_levl"),
    (tf.GPUOptions, "allow_grwth"),
    (tf.RunMetadata, "step_stat"),
    (tf.GraphOptions, "optimiser_options"),
    (tf.OptimizerOptions, "global_jit_levl"),
])
def test_assigning_a_misspelled_field_raises_attribute_error(make, typo):
    message = make()
    with pytest.raises(AttributeError, match=typo):
        setattr(message, typo, True)
    assert not hasattr(message, typo)


@pytest.mark.parametrize("make, typo", [
    (tf.ConfigProto, "allow_soft_placment"),
    (tf.RunOptions, "trace_levl"),
    (tf.GPUOptions, "allow_grwth"),
    (tf.RunMetadata, "partition_graph"),
])
def test_constructing_with_a_misspelled_keyword_names_message_and_field(make, typo):
    with pytest.raises(ValueError, match=f'Protocol message {make.__name__} has no "{typo}" field'):
        make(**{typo: 1})


def test_nested_options_refuse_typos_too_and_real_fields_still_work():
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))
    config.log_device_placement = True
    config.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.ON_1
    with pytest.raises(AttributeError):
        config.gpu_options.per_process_gpu_memory_fracton = 0.5
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    options.timeout_in_ms = 1000
    assert (config.log_device_placement, config.gpu_options.allow_growth,
            options.trace_level, options.timeout_in_ms) == (True, True, 3, 1000)
    assert config.graph_options.optimizer_options.global_jit_level == 1


def test_session_runs_with_traced_options_after_the_change():
    with tf.Graph().as_default():
        total = tf.constant(2.0) + 3.0
        metadata = tf.RunMetadata()
        with tf.Session(config=tf.ConfigProto(log_device_placement=False)) as sess:
            assert sess.run(total, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                            run_metadata=metadata) == 5.0
        assert metadata.step_stats.dev_stats
