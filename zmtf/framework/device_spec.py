"""DeviceSpec: a partial device name such as "/job:ps/replica:0/task:1/device:GPU:0".

This is TF1's ``tf.DeviceSpec`` (``DeviceSpecV1``): a mutable spec with settable fields,
``parse_from_string`` and ``merge_from``, plus TF2's ``from_string``, ``make_merged_spec`` and
``replace``. Any field may be unset (None), which means "any". When specs are merged, fields
set in the inner (newer) spec win, which is the ``tf.device`` nesting rule.

Parsing follows TF's own parser, with one difference: TF silently accepts some malformed parts
("/job:", "/:0", "/device::0", "/task:-1") and this parser rejects them, so that every spec
survives a ``to_string()`` / ``from_string()`` round trip.
"""

from __future__ import annotations

from typing import Any, Self

# Device types that may be written without the "device:" prefix ("/gpu:1", "CPU:0"), as in TF.
_SHORTHAND_DEVICE_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU"})
_FIELDS = ("job", "replica", "task", "device_type", "device_index")
_ANY_INDEX = "*"

_Components = tuple[str | None, int | None, int | None, str | None, int | None]


def _where(spec: str | None) -> str:
    """Name the whole spec in an error, when the bad value came from one."""
    return "" if spec is None else f" in {spec!r}"


def _as_name(field: str, value: object, spec: str | None = None) -> str | None:
    """Check a job name or device type; '/' or ':' in it would break the round trip."""
    if value is None:
        return None
    text = str(value)
    if not text or "/" in text or ":" in text:
        raise ValueError(
            f"Invalid {field}: {text!r}{_where(spec)}; it must be non-empty and "
            "contain no '/' or ':'"
        )
    return text


def _as_device_type(value: object, spec: str | None = None) -> str | None:
    """Normalize a device type; TF upper-cases only the legacy lowercase "cpu" and "gpu"."""
    # NOTE: as in TF, "/device:tpu:0" keeps "tpu"; only the shorthand "/tpu:0" upper-cases.
    text = _as_name("device_type", value, spec)
    return text.upper() if text in ("cpu", "gpu") else text


def _as_index(field: str, value: object, spec: str | None = None) -> int | None:
    """Check a replica, task or device index: a non-negative int or a string of digits."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise ValueError(
        f"Invalid {field}: {value!r}{_where(spec)}; it must be a non-negative integer"
    )


def _parse_device_index(text: str, spec: str) -> int | None:
    """Read the index after a device type; "*" means any index."""
    if text == _ANY_INDEX:
        return None
    if text.isascii() and text.isdigit():
        return int(text)
    raise ValueError(
        f"Invalid device index: {text!r} in {spec!r}; it must be a non-negative integer or '*'"
    )


def _parse_part(part: str, spec: str) -> dict[str, Any]:
    """Parse one '/'-separated part ("job:ps", "gpu:1", "device:GPU:0") into fields."""
    name, *values = part.split(":")
    if name == "job" and len(values) == 1:
        return {"job": _as_name("job", values[0], spec)}
    if name in ("replica", "task") and len(values) == 1:
        return {name: _as_index(name, values[0], spec)}
    if name == "device" and len(values) == 2:
        device_type = _as_device_type(values[0], spec)
        return {"device_type": device_type, "device_index": _parse_device_index(values[1], spec)}
    if name.upper() in _SHORTHAND_DEVICE_TYPES and len(values) <= 1:
        index = _parse_device_index(values[0], spec) if values else None
        return {"device_type": name.upper(), "device_index": index}
    raise ValueError(f"Unknown attribute: {name!r} in {spec!r}")


def _parse(spec: str | None) -> _Components:
    """Split a device string into its five fields; empty or None gives an all-None spec."""
    if spec is not None and not isinstance(spec, str):
        raise TypeError(f"A device spec must be a string or None, got {type(spec).__name__}")
    text = spec or ""
    fields: dict[str, Any] = {}
    for part in text.split("/"):
        if not part:
            continue
        parsed = _parse_part(part, text)
        if "device_type" in parsed and "device_type" in fields:
            raise ValueError(f"Cannot specify multiple device types: {part!r} in {text!r}")
        fields.update(parsed)
    job, replica, task, device_type, device_index = (fields.get(f) for f in _FIELDS)
    return job, replica, task, device_type, device_index


class DeviceSpec:
    """A (possibly partial) device: ``DeviceSpec(job="ps", device_type="GPU", device_index=0)``.

    Mutable as in TF1: the fields can be set and ``parse_from_string``/``merge_from`` change
    the spec in place. Equality and the hash follow ``to_string()``, so do not mutate a spec
    while it is a dict key or in a set.
    """

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index")

    def __init__(
        self,
        job: str | None = None,
        replica: int | str | None = None,
        task: int | str | None = None,
        device_type: str | None = None,
        device_index: int | str | None = None,
    ) -> None:
        self.job = job
        self.replica = replica
        self.task = task
        self.device_type = device_type
        self.device_index = device_index

    @property
    def job(self) -> str | None:
        """The job name ("ps", "worker"); None means any job."""
        return self._job

    @job.setter
    def job(self, job: str | None) -> None:
        self._job = _as_name("job", job)

    @property
    def replica(self) -> int | None:
        """The replica index; None means any replica."""
        return self._replica

    @replica.setter
    def replica(self, replica: int | str | None) -> None:
        self._replica = _as_index("replica", replica)

    @property
    def task(self) -> int | None:
        """The task index within the job; None means any task."""
        return self._task

    @task.setter
    def task(self, task: int | str | None) -> None:
        self._task = _as_index("task", task)

    @property
    def device_type(self) -> str | None:
        """The device type ("CPU", "GPU"); None means any type."""
        return self._device_type

    @device_type.setter
    def device_type(self, device_type: str | None) -> None:
        self._device_type = _as_device_type(device_type)

    @property
    def device_index(self) -> int | None:
        """The device index; None means any device of the type."""
        return self._device_index

    @device_index.setter
    def device_index(self, device_index: int | str | None) -> None:
        self._device_index = _as_index("device_index", device_index)

    @classmethod
    def from_string(cls, spec: str | None) -> Self:
        """Build a spec from "/job:ps/task:0/device:GPU:0", "/gpu:1", "CPU:0", "" or None."""
        return cls(*_parse(spec))

    def parse_from_string(self, spec: str | None) -> Self:
        """Replace every field with those parsed from spec (TF1); self is unchanged on error."""
        self.job, self.replica, self.task, self.device_type, self.device_index = _parse(spec)
        return self

    def merge_from(self, dev: DeviceSpec) -> None:
        """Override this spec's fields with those set in dev, in place (TF1)."""
        merged = self._merged_components(dev)
        self.job, self.replica, self.task, self.device_type, self.device_index = merged

    def make_merged_spec(self, dev: DeviceSpec) -> Self:
        """Return a new spec: this one with the fields set in dev taking precedence."""
        return type(self)(*self._merged_components(dev))

    def replace(self, **kwargs: Any) -> Self:
        """Return a copy with the named fields replaced: ``spec.replace(device_type="GPU")``."""
        fields: dict[str, Any] = {name: getattr(self, name) for name in _FIELDS}
        fields.update(kwargs)
        return type(self)(**fields)

    def to_string(self) -> str:
        """Return the canonical form, e.g. "/job:ps/replica:0/task:1/device:GPU:0"."""
        prefix = (("job", self._job), ("replica", self._replica), ("task", self._task))
        head = "".join(f"/{name}:{value}" for name, value in prefix if value is not None)
        if self._device_type is None:
            return head
        index = _ANY_INDEX if self._device_index is None else self._device_index
        return f"{head}/device:{self._device_type}:{index}"

    def _merged_components(self, dev: DeviceSpec) -> _Components:
        """Pick each field from dev when it is set there, else from self."""
        return (
            self._job if dev.job is None else dev.job,
            self._replica if dev.replica is None else dev.replica,
            self._task if dev.task is None else dev.task,
            self._device_type if dev.device_type is None else dev.device_type,
            self._device_index if dev.device_index is None else dev.device_index,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeviceSpec):
            return NotImplemented
        return self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={getattr(self, name)!r}" for name in _FIELDS if getattr(self, name) is not None
        )
        return f"DeviceSpec({fields})"


def _as_spec(spec: str | DeviceSpec | None) -> DeviceSpec:
    """Accept either form wherever a device is expected, as TF's helpers do."""
    return spec if isinstance(spec, DeviceSpec) else DeviceSpec.from_string(spec)


def canonical_name(spec: str | DeviceSpec | None) -> str:
    """Return the one canonical string for a device, so equal devices compare equal as text."""
    return _as_spec(spec).to_string()


def merge_device(outer: str | DeviceSpec | None, inner: str | DeviceSpec | None) -> str:
    """Nest inner inside outer as ``tf.device`` does: fields set in inner win."""
    return _as_spec(outer).make_merged_spec(_as_spec(inner)).to_string()


def fill_defaults(
    spec: str | DeviceSpec | None,
    job: str | None = "localhost",
    replica: int | None = 0,
    task: int | None = 0,
    device_type: str | None = "CPU",
    device_index: int | None = 0,
) -> DeviceSpec:
    """Complete a partial spec for placement; the defaults are TF's local CPU device."""
    defaults = DeviceSpec(job, replica, task, device_type, device_index)
    return defaults.make_merged_spec(_as_spec(spec))


def is_compatible(requested: str | DeviceSpec | None, actual: str | DeviceSpec | None) -> bool:
    """Tell whether actual satisfies requested: every field set in requested matches."""
    wanted, found = _as_spec(requested), _as_spec(actual)
    return all(
        getattr(wanted, name) is None or getattr(wanted, name) == getattr(found, name)
        for name in _FIELDS
    )


def short_name(spec: str | DeviceSpec | None) -> str:
    """Return "GPU:0" (or "GPU:*") for logs and kernel lookup, without the task prefix."""
    device = _as_spec(spec)
    if device.device_type is None:
        raise ValueError(
            f"Device {device.to_string()!r} has no device type, so it has no short name; "
            "fill it in first with fill_defaults()"
        )
    index = _ANY_INDEX if device.device_index is None else device.device_index
    return f"{device.device_type}:{index}"
