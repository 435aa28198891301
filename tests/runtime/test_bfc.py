"""runtime.bfc: best fit with coalescing over regions, alignment, growth within the limit.
Pure accounting (addresses are ints): no device needed."""

import pytest

from zmtf.runtime.bfc import ALIGNMENT, BestFitAllocator, Exhausted, rounded

MIB = 1 << 20


class Device:
    """Hands out regions at increasing, aligned, non-adjacent addresses, as a driver would."""

    def __init__(self, capacity: int = 1 << 40) -> None:
        self.capacity, self.next, self.regions = capacity, 1 << 30, []

    def extend(self, size: int) -> int:
        if sum(self.regions) + size > self.capacity:
            raise MemoryError(f"out of memory: {size} bytes")
        base, self.next = self.next, self.next + size + 64 * MIB
        self.regions.append(size)
        return base


def reserved(limit: int) -> tuple[BestFitAllocator, Device]:
    device = Device()
    allocator = BestFitAllocator(limit, device.extend, allow_growth=False)
    allocator.reserve()
    return allocator, device


def test_the_limit_is_reserved_up_front_as_one_region():
    allocator, device = reserved(4 * MIB)
    assert device.regions == [4 * MIB]
    stats = allocator.stats()
    assert (stats.bytes_reserved, stats.regions, stats.bytes_in_use, stats.bytes_free) == (4 * MIB, 1, 0, 4 * MIB)
    allocator.allocate(3 * MIB)
    with pytest.raises(Exhausted) as full:
        allocator.allocate(2 * MIB)                     # never grows without allow_growth
    assert device.regions == [4 * MIB]
    assert (full.value.requested, full.value.stats.bytes_in_use) == (2 * MIB, 3 * MIB)


def test_sizes_and_addresses_are_256_byte_aligned():
    assert [rounded(n) for n in (1, 255, 256, 257, 1000)] == [256, 256, 256, 512, 1024]
    allocator, _ = reserved(MIB)
    chunks = [allocator.allocate(n) for n in (1, 300, 4097, 7, 1000)]
    assert all(c.address % ALIGNMENT == 0 and c.size % ALIGNMENT == 0 for c in chunks)
    assert [c.size for c in chunks] == [256, 512, 4352, 256, 1024]
    assert [b.address - a.address for a, b in zip(chunks, chunks[1:])] == [256, 512, 4352, 256]


def test_a_freed_chunk_is_reused_at_the_same_address():
    allocator, _ = reserved(MIB)
    first = allocator.allocate(10_000)
    allocator.allocate(100)                            # keeps first from merging with the rest
    allocator.free(first)
    again = allocator.allocate(9_000)                  # fits the freed chunk: best fit
    assert again.address == first.address


def test_best_fit_takes_the_smallest_free_chunk_that_fits():
    allocator, _ = reserved(MIB)
    big = allocator.allocate(8192)
    allocator.allocate(256)
    small = allocator.allocate(1024)
    allocator.allocate(256)
    allocator.free(big)
    allocator.free(small)
    assert allocator.allocate(1000).address == small.address   # not the lower, bigger one
    assert allocator.allocate(1000).address == big.address     # then the 8 KiB one, split


def test_freeing_neighbours_coalesces_them_into_one_chunk():
    allocator, _ = reserved(MIB)
    a, b, c = (allocator.allocate(4096) for _ in range(3))
    allocator.free(a)
    allocator.free(c)                                   # c merges with the free rest
    stats = allocator.stats()
    assert stats.bytes_free == MIB - 4096
    assert stats.largest_free_block_bytes == MIB - 8192
    assert stats.fragmentation == pytest.approx(1 - (MIB - 8192) / (MIB - 4096))
    allocator.free(b)                                   # joins a and the rest: one piece again
    stats = allocator.stats()
    assert (stats.bytes_in_use, stats.largest_free_block_bytes, stats.fragmentation) == (0, MIB, 0.0)
    assert allocator.allocate(MIB).address == a.address


def test_allow_growth_adds_doubling_regions_and_never_passes_the_limit():
    device = Device()
    allocator = BestFitAllocator(8 * MIB, device.extend, allow_growth=True)
    assert allocator.stats().bytes_reserved == 0                # nothing up front
    allocator.allocate(1000)
    assert device.regions == [MIB]                              # the first region: 1 MiB
    allocator.allocate(MIB)                                     # does not fit the rest: grow
    assert device.regions == [MIB, 2 * MIB]
    allocator.allocate(3 * MIB)                                 # 4 MiB would do, 5 MiB is left
    assert device.regions == [MIB, 2 * MIB, 4 * MIB]
    with pytest.raises(Exhausted):
        allocator.allocate(2 * MIB)                             # only 1 MiB left under the cap
    allocator.allocate(MIB - 4096)                              # fits in the free parts
    stats = allocator.stats()
    assert stats.bytes_reserved == 7 * MIB <= stats.bytes_limit and stats.regions == 3
    assert stats.peak_bytes_in_use == stats.bytes_in_use


def test_growth_takes_just_enough_when_the_device_has_less_than_a_doubling():
    device = Device(capacity=5 * MIB // 2)
    allocator = BestFitAllocator(64 * MIB, device.extend, allow_growth=True)
    allocator.allocate(MIB)
    allocator.allocate(1536 * 1024)                     # 2 MiB region fails: 1.5 MiB is taken
    assert device.regions == [MIB, 1536 * 1024]


def test_a_free_from_inside_an_allocation_is_applied_afterwards():
    # a garbage-collection finalizer can free a chunk while this thread is inside allocate
    allocator: BestFitAllocator
    held = []

    def extend(size: int) -> int:
        if held:
            allocator.free(held.pop())                  # runs under the allocator's lock
        return Device.extend(device, size)

    device = Device()
    allocator = BestFitAllocator(64 * MIB, extend, allow_growth=True)
    held.append(allocator.allocate(MIB))
    allocator.allocate(MIB)                             # grows; the free above is queued
    stats = allocator.stats()
    assert stats.bytes_in_use == MIB and stats.num_allocs == 2


def test_a_chunk_freed_twice_is_refused():
    allocator, _ = reserved(MIB)
    chunk = allocator.allocate(256)
    allocator.free(chunk)
    with pytest.raises(ValueError, match="freed twice"):
        allocator.free(chunk)


def test_a_reservation_the_device_cannot_give_backs_off_and_becomes_the_limit():
    device = Device(capacity=3 * MIB)                   # another program holds the rest
    allocator = BestFitAllocator(4 * MIB, device.extend, allow_growth=False)
    got = allocator.reserve()
    assert got == device.regions[0] <= 3 * MIB and got > 2 * MIB    # 4 MiB x 0.9 x 0.9 ...
    assert allocator.stats().bytes_limit == got
    with pytest.raises(MemoryError):                    # nothing at all: the device's error
        BestFitAllocator(4 * MIB, Device(capacity=MIB // 2).extend, allow_growth=False).reserve()
