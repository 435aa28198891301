"""DeviceSpec parsing, canonical form, merging and the TF1 mutation API, checked exactly."""

from __future__ import annotations

import copy

import pytest

from zmtf.framework.device_spec import (
    DeviceSpec,
    canonical_name,
    fill_defaults,
    is_compatible,
    merge_device,
    short_name,
)

# spec string -> (job, replica, task, device_type, device_index), canonical string
PARSE_CASES = [
    ("/job:ps/replica:0/task:1/device:GPU:0", ("ps", 0, 1, "GPU", 0),
     "/job:ps/replica:0/task:1/device:GPU:0"),
    ("/job:ps/task:0/cpu:0", ("ps", None, 0, "CPU", 0), "/job:ps/task:0/device:CPU:0"),
    ("/job:worker/task:0/gpu:1", ("worker", None, 0, "GPU", 1), "/job:worker/task:0/device:GPU:1"),
    ("/gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/cpu:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("/CPU:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("/Gpu:2", (None, None, None, "GPU", 2), "/device:GPU:2"),
    ("/gpu", (None, None, None, "GPU", None), "/device:GPU:*"),
    ("/gpu:*", (None, None, None, "GPU", None), "/device:GPU:*"),
    ("/tpu:3", (None, None, None, "TPU", 3), "/device:TPU:3"),
    ("/device:CPU:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("/device:cpu:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("/device:gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/device:GPU:*", (None, None, None, "GPU", None), "/device:GPU:*"),
    # TF keeps the case of other types written with "device:".
    ("/device:XLA_GPU:0", (None, None, None, "XLA_GPU", 0), "/device:XLA_GPU:0"),
    ("/job:worker", ("worker", None, None, None, None), "/job:worker"),
    ("/task:1", (None, None, 1, None, None), "/task:1"),
    ("/replica:2", (None, 2, None, None, None), "/replica:2"),
    ("", (None, None, None, None, None), ""),
    (None, (None, None, None, None, None), ""),
    ("/", (None, None, None, None, None), ""),
    ("CPU:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("GPU:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("job:ps/task:3", ("ps", None, 3, None, None), "/job:ps/task:3"),
    ("//job:ps//task:3/", ("ps", None, 3, None, None), "/job:ps/task:3"),
    ("/task:1/job:ps", ("ps", None, 1, None, None), "/job:ps/task:1"),
    ("/job:ps/job:worker", ("worker", None, None, None, None), "/job:worker"),
    ("/job:localhost/replica:0/task:0/device:CPU:0", ("localhost", 0, 0, "CPU", 0),
     "/job:localhost/replica:0/task:0/device:CPU:0"),
]


def _fields(spec: DeviceSpec) -> tuple[object, ...]:
    return (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index)


@pytest.mark.parametrize("text, fields, canonical", PARSE_CASES)
def test_from_string_fields_and_canonical_form(text, fields, canonical):
    spec = DeviceSpec.from_string(text)
    assert _fields(spec) == fields
    assert spec.to_string() == canonical
    assert canonical_name(text) == canonical


@pytest.mark.parametrize("text, fields, canonical", PARSE_CASES)
def test_canonical_form_round_trips(text, fields, canonical):
    again = DeviceSpec.from_string(canonical)
    assert _fields(again) == fields
    assert again.to_string() == canonical


@pytest.mark.parametrize("text, fields, canonical", PARSE_CASES)
def test_parse_from_string_mutates_and_returns_self(text, fields, canonical):
    spec = DeviceSpec(job="old", replica=9, task=9, device_type="TPU", device_index=9)
    assert spec.parse_from_string(text) is spec
    assert _fields(spec) == fields


@pytest.mark.parametrize(
    "kwargs, canonical",
    [
        ({}, ""),
        ({"job": "ps"}, "/job:ps"),
        ({"job": "ps", "device_type": "GPU", "device_index": 0}, "/job:ps/device:GPU:0"),
        ({"device_type": "GPU"}, "/device:GPU:*"),
        ({"device_type": "gpu", "device_index": "1"}, "/device:GPU:1"),
        ({"device_type": "cpu"}, "/device:CPU:*"),
        ({"job": 0, "replica": "1", "task": 2}, "/job:0/replica:1/task:2"),
        # An index without a type does not show in the string, as in TF.
        ({"device_index": 3}, ""),
    ],
)
def test_constructor_to_string(kwargs, canonical):
    assert DeviceSpec(**kwargs).to_string() == canonical


@pytest.mark.parametrize(
    "text, message",
    [
        ("/foo:1", "Unknown attribute: 'foo' in '/foo:1'"),
        ("/job", "Unknown attribute: 'job' in '/job'"),
        ("/job:ps/task", "Unknown attribute: 'task' in '/job:ps/task'"),
        ("/job:ps:1", "Unknown attribute: 'job' in '/job:ps:1'"),
        ("/device:GPU", "Unknown attribute: 'device' in '/device:GPU'"),
        ("/device:GPU:0:1", "Unknown attribute: 'device' in '/device:GPU:0:1'"),
        ("/Device:GPU:0", "Unknown attribute: 'Device' in '/Device:GPU:0'"),
        ("/gpu:0:1", "Unknown attribute: 'gpu' in '/gpu:0:1'"),
        ("/:0", "Unknown attribute: '' in '/:0'"),
        ("/job:", "Invalid job: '' in '/job:'; it must be non-empty and contain no '/' or ':'"),
        ("/task:x", "Invalid task: 'x' in '/task:x'; it must be a non-negative integer"),
        ("/task:", "Invalid task: '' in '/task:'; it must be a non-negative integer"),
        ("/task:-1", "Invalid task: '-1' in '/task:-1'; it must be a non-negative integer"),
        ("/replica:1.5",
         "Invalid replica: '1.5' in '/replica:1.5'; it must be a non-negative integer"),
        ("/gpu:x",
         "Invalid device index: 'x' in '/gpu:x'; it must be a non-negative integer or '*'"),
        ("/device:GPU:", "Invalid device index: '' in '/device:GPU:'; "
                         "it must be a non-negative integer or '*'"),
        ("/device::0", "Invalid device_type: '' in '/device::0'; "
                       "it must be non-empty and contain no '/' or ':'"),
        ("/cpu:0/gpu:1", "Cannot specify multiple device types: 'gpu:1' in '/cpu:0/gpu:1'"),
        ("/device:CPU:0/device:GPU:0",
         "Cannot specify multiple device types: 'device:GPU:0' in '/device:CPU:0/device:GPU:0'"),
        ("/gpu:0/device:GPU:0",
         "Cannot specify multiple device types: 'device:GPU:0' in '/gpu:0/device:GPU:0'"),
    ],
)
def test_bad_spec_raises_value_error_naming_part_and_spec(text, message):
    with pytest.raises(ValueError) as info:
        DeviceSpec.from_string(text)
    assert str(info.value) == message


def test_failed_parse_from_string_leaves_spec_unchanged():
    spec = DeviceSpec.from_string("/job:ps/task:0/cpu:0")
    with pytest.raises(ValueError, match="Unknown attribute"):
        spec.parse_from_string("/job:worker/foo:1")
    assert spec.to_string() == "/job:ps/task:0/device:CPU:0"


def test_non_string_spec_is_a_type_error():
    with pytest.raises(TypeError, match="must be a string or None, got int"):
        DeviceSpec.from_string(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"task": "x"}, "Invalid task: 'x'; it must be a non-negative integer"),
        ({"replica": -1}, "Invalid replica: -1; it must be a non-negative integer"),
        ({"device_index": True}, "Invalid device_index: True; it must be a non-negative integer"),
        ({"device_index": 1.0}, "Invalid device_index: 1.0; it must be a non-negative integer"),
        ({"job": ""}, "Invalid job: ''; it must be non-empty and contain no '/' or ':'"),
        ({"job": "a/b"}, "Invalid job: 'a/b'; it must be non-empty and contain no '/' or ':'"),
        ({"device_type": "GPU:0"},
         "Invalid device_type: 'GPU:0'; it must be non-empty and contain no '/' or ':'"),
    ],
)
def test_bad_constructor_field_raises_value_error(kwargs, message):
    with pytest.raises(ValueError) as info:
        DeviceSpec(**kwargs)
    assert str(info.value) == message


def test_setters_change_fields_and_string():
    spec = DeviceSpec()
    spec.job = "worker"
    spec.replica = 0
    spec.task = "3"
    spec.device_type = "gpu"
    spec.device_index = 1
    assert _fields(spec) == ("worker", 0, 3, "GPU", 1)
    assert spec.to_string() == "/job:worker/replica:0/task:3/device:GPU:1"
    spec.device_index = None
    spec.replica = None
    assert spec.to_string() == "/job:worker/task:3/device:GPU:*"


def test_setter_rejects_bad_value_and_keeps_old_one():
    spec = DeviceSpec(task=1)
    with pytest.raises(ValueError, match="Invalid task: 'x'"):
        spec.task = "x"
    assert spec.task == 1


def test_merge_from_overrides_only_fields_set_in_dev():
    spec = DeviceSpec.from_string("/job:worker/replica:0/task:0/device:CPU:0")
    assert spec.merge_from(DeviceSpec.from_string("/task:2/gpu:1")) is None
    assert spec.to_string() == "/job:worker/replica:0/task:2/device:GPU:1"
    spec.merge_from(DeviceSpec())
    assert spec.to_string() == "/job:worker/replica:0/task:2/device:GPU:1"


def test_merge_from_with_any_index_keeps_old_index():
    # TF merges field by field: an unset index in dev does not clear the old one.
    spec = DeviceSpec.from_string("/device:CPU:3")
    spec.merge_from(DeviceSpec.from_string("/device:GPU:*"))
    assert spec.to_string() == "/device:GPU:3"


def test_make_merged_spec_returns_new_spec_and_leaves_both_alone():
    first = DeviceSpec(job="ps", device_type="CPU")
    second = DeviceSpec(device_type="GPU", device_index=1)
    merged = first.make_merged_spec(second)
    assert merged.to_string() == "/job:ps/device:GPU:1"
    assert merged is not first and merged is not second
    assert first.to_string() == "/job:ps/device:CPU:*"
    assert second.to_string() == "/device:GPU:1"


def test_replace_overrides_named_fields_only():
    spec = DeviceSpec.from_string("/job:ps/task:0/device:CPU:0")
    assert spec.replace(device_type="GPU").to_string() == "/job:ps/task:0/device:GPU:0"
    assert spec.replace(task=None, device_index=None).to_string() == "/job:ps/device:CPU:*"
    assert spec.to_string() == "/job:ps/task:0/device:CPU:0"


def test_replace_unknown_field_is_a_type_error():
    with pytest.raises(TypeError, match="device"):
        DeviceSpec().replace(device="GPU")


def test_eq_and_hash_follow_canonical_string():
    a = DeviceSpec.from_string("/job:ps/task:0/cpu:0")
    b = DeviceSpec(job="ps", task=0, device_type="CPU", device_index=0)
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != DeviceSpec.from_string("/job:ps/task:0/cpu:1")
    assert a != "/job:ps/task:0/device:CPU:0"


def test_hash_reflects_current_fields_after_mutation():
    spec = DeviceSpec(job="ps")
    spec.job = "worker"
    assert spec == DeviceSpec(job="worker")
    assert hash(spec) == hash(DeviceSpec(job="worker"))
    spec.parse_from_string("/gpu:0")
    assert spec == DeviceSpec.from_string("/device:GPU:0")
    assert hash(spec) == hash(DeviceSpec.from_string("/device:GPU:0"))


def test_copy_is_independent():
    spec = DeviceSpec.from_string("/job:ps/gpu:0")
    clone = copy.copy(spec)
    clone.task = 4
    assert spec.to_string() == "/job:ps/device:GPU:0"
    assert clone.to_string() == "/job:ps/task:4/device:GPU:0"


def test_repr_names_set_fields():
    spec = DeviceSpec.from_string("/job:ps/task:0/gpu:1")
    assert repr(spec) == "DeviceSpec(job='ps', task=0, device_type='GPU', device_index=1)"
    assert repr(DeviceSpec()) == "DeviceSpec()"


def test_subclass_builders_keep_the_subclass():
    class MySpec(DeviceSpec):
        __slots__ = ()

    spec = MySpec.from_string("/cpu:0")
    assert type(spec) is MySpec
    assert type(spec.make_merged_spec(DeviceSpec(task=1))) is MySpec
    assert type(spec.replace(job="ps")) is MySpec


@pytest.mark.parametrize(
    "outer, inner, merged",
    [
        ("/job:worker/task:0", "/gpu:1", "/job:worker/task:0/device:GPU:1"),
        ("/job:worker/task:0", "/task:1", "/job:worker/task:1"),
        ("/job:worker", "/gpu:1", "/job:worker/device:GPU:1"),
        ("/job:worker/gpu:1", "/task:1", "/job:worker/task:1/device:GPU:1"),
        ("/job:ps/task:0/cpu:0", "/job:worker", "/job:worker/task:0/device:CPU:0"),
        ("/device:GPU:0", "/device:CPU:0", "/device:CPU:0"),
        ("/job:ps/device:GPU:0", "/device:GPU:*", "/job:ps/device:GPU:0"),
        ("", "/job:ps", "/job:ps"),
        ("/job:ps", "", "/job:ps"),
        (None, None, ""),
    ],
)
def test_merge_device_inner_fields_win(outer, inner, merged):
    assert merge_device(outer, inner) == merged


def test_merge_device_nests_three_levels():
    # with tf.device("/gpu:0"): with tf.device("/job:worker"): with tf.device("/cpu:0"): ...
    level = merge_device("/device:GPU:0", "/job:worker")
    assert level == "/job:worker/device:GPU:0"
    level = merge_device(level, "/device:CPU:0")
    assert level == "/job:worker/device:CPU:0"
    assert merge_device(level, "/job:ps") == "/job:ps/device:CPU:0"


def test_merge_device_accepts_specs():
    assert merge_device(DeviceSpec(job="ps"), DeviceSpec(task=1)) == "/job:ps/task:1"


def test_merge_device_rejects_bad_inner():
    with pytest.raises(ValueError, match="Unknown attribute: 'foo' in '/foo:1'"):
        merge_device("/job:ps", "/foo:1")


def test_canonical_name_of_spec_and_none():
    assert canonical_name(DeviceSpec(device_type="gpu", device_index=0)) == "/device:GPU:0"
    assert canonical_name(None) == ""


@pytest.mark.parametrize(
    "spec, filled",
    [
        ("", "/job:localhost/replica:0/task:0/device:CPU:0"),
        (None, "/job:localhost/replica:0/task:0/device:CPU:0"),
        ("/gpu:1", "/job:localhost/replica:0/task:0/device:GPU:1"),
        ("/job:ps/task:2", "/job:ps/replica:0/task:2/device:CPU:0"),
        ("/device:GPU:*", "/job:localhost/replica:0/task:0/device:GPU:0"),
    ],
)
def test_fill_defaults_uses_local_cpu_defaults(spec, filled):
    assert fill_defaults(spec).to_string() == filled


def test_fill_defaults_with_given_defaults_keeps_spec_fields():
    filled = fill_defaults(DeviceSpec(task=3), "worker", 1, 0, "GPU", 2)
    assert _fields(filled) == ("worker", 1, 3, "GPU", 2)
    assert isinstance(filled, DeviceSpec)


def test_fill_defaults_does_not_mutate_input():
    spec = DeviceSpec(task=3)
    fill_defaults(spec)
    assert spec.to_string() == "/task:3"


@pytest.mark.parametrize(
    "requested, actual, expected",
    [
        ("", "/job:worker/replica:0/task:1/device:GPU:0", True),
        ("/gpu:0", "/job:worker/replica:0/task:1/device:GPU:0", True),
        ("/device:GPU:*", "/job:worker/replica:0/task:1/device:GPU:3", True),
        ("/job:worker/task:1", "/job:worker/replica:0/task:1/device:GPU:0", True),
        ("/job:worker/task:1/cpu:0", "/job:worker/task:1/device:CPU:0", True),
        ("/gpu:1", "/job:worker/replica:0/task:1/device:GPU:0", False),
        ("/cpu:0", "/job:worker/replica:0/task:1/device:GPU:0", False),
        ("/job:ps", "/job:worker/replica:0/task:1/device:GPU:0", False),
        ("/task:0", "/job:worker/replica:0/task:1/device:GPU:0", False),
        ("/replica:1", "/job:worker/replica:0/task:1/device:GPU:0", False),
        ("/job:worker", "/device:GPU:0", False),
    ],
)
def test_is_compatible_requires_every_set_field_to_match(requested, actual, expected):
    wanted, found = DeviceSpec.from_string(requested), DeviceSpec.from_string(actual)
    assert is_compatible(wanted, found) is expected
    assert is_compatible(requested, actual) is expected


@pytest.mark.parametrize(
    "spec, name",
    [
        ("/job:ps/replica:0/task:0/device:CPU:0", "CPU:0"),
        ("/gpu:1", "GPU:1"),
        ("/device:GPU:*", "GPU:*"),
        (DeviceSpec(device_type="cpu", device_index=2), "CPU:2"),
    ],
)
def test_short_name(spec, name):
    assert short_name(spec) == name


def test_short_name_without_device_type_raises():
    with pytest.raises(ValueError) as info:
        short_name("/job:ps/task:0")
    assert str(info.value) == (
        "Device '/job:ps/task:0' has no device type, so it has no short name; "
        "fill it in first with fill_defaults()"
    )
