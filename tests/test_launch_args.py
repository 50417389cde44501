"""The launch parameter block (evo.evaluation.launch_args): what the driver would read for each launch,
read back through raw memory as the driver reads it. The tensor maps are stand-ins: 128 bytes whose
first 8 hold the address (the real layout is the driver's own)."""
import ctypes

import pytest

from evo.evaluation.launch_args import LaunchArgs


class FakeMaps:
    def __init__(self, operands):
        self.specs = [{"operand": o} for o in operands]
        self.encoded = []

    def template(self, j, ptr):  # like TensorMaps: encoded once, for the first address asked for
        if not any(e[0] == j for e in self.encoded):
            self.encoded.append((j, ptr))
        held = next(p for e, p in self.encoded if e == j)
        return held.to_bytes(8, "little") + bytes([j + 1]) * 120, held

    def readdress(self, where, j, ptr):
        assert where % 64 == 0, "the driver needs tensor maps 64-byte aligned"
        ctypes.memmove(where, ptr.to_bytes(8, "little"), 8)


def _u64(addr):
    return ctypes.c_uint64.from_address(addr).value


def _params(args, i, count):
    table = args.address(i)
    return [_u64(table + 8 * p) for p in range(count)]


def test_every_launch_points_at_its_own_buffers_sizes_and_maps():
    maps = FakeMaps(["A", "B", "C"])
    bases, steps, n = (1 << 40, 2 << 40, 3 << 40), (4096, 8192, 64), 1000
    args = LaunchArgs(maps, bases, steps, n, 77, 4096, 333)
    assert maps.encoded == [(0, bases[0]), (1, bases[1]), (2, bases[2])]  # each map encoded once
    for i in (0, 1, 517, n - 1):
        a, b, c, m, nn, k, *tmaps = _params(args, i, 9)
        assert [_u64(a), _u64(b), _u64(c)] == [base + i * step for base, step in zip(bases, steps)]
        assert [ctypes.c_int32.from_address(p).value for p in (m, nn, k)] == [77, 4096, 333]
        for j, (t, base, step) in enumerate(zip(tmaps, bases, steps)):
            assert t % 64 == 0
            raw = ctypes.string_at(t, 128)
            assert int.from_bytes(raw[:8], "little") == base + i * step
            assert raw[8:] == bytes([j + 1]) * 120


def test_a_in_a_given_order_moves_its_pointer_and_its_tensor_map_only():
    maps = FakeMaps(["A", "B", "C"])
    bases, steps, n = (1 << 40, 2 << 40, 3 << 40), (4096, 8192, 64), 50
    order = [(7 * i + 3) % n for i in range(n)]  # a permutation of range(50)
    args = LaunchArgs(maps, bases, steps, n, 8, 8, 8, a_order=order)
    for i in (0, 1, 17, n - 1):
        a, b, c, *_, ta, tb, tc = _params(args, i, 9)
        assert [_u64(a), _u64(b), _u64(c)] == [bases[0] + order[i] * steps[0], bases[1] + i * steps[1],
                                               bases[2] + i * steps[2]]
        assert [int.from_bytes(ctypes.string_at(t, 8), "little") for t in (ta, tb, tc)] == [
            _u64(a), _u64(b), _u64(c)]
    with pytest.raises(ValueError, match="permutation"):
        LaunchArgs(maps, bases, steps, 3, 8, 8, 8, a_order=[0, 0, 1])


def test_a_single_launch_without_tensor_maps():
    args = LaunchArgs(FakeMaps([]), (10, 20, 30), (0, 0, 0), 1, 1, 2, 3)
    a, b, c, m, n, k = _params(args, 0, 6)
    assert [_u64(a), _u64(b), _u64(c)] == [10, 20, 30]
    assert [ctypes.c_int32.from_address(p).value for p in (m, n, k)] == [1, 2, 3]


def test_maps_of_one_operand_twice_and_a_fixed_buffer():
    maps = FakeMaps(["B", "B"])
    args = LaunchArgs(maps, (0, 1 << 20, 0), (0, 0, 4), 3, 1, 1, 1)  # B the same for every launch
    for i in range(3):
        *_, t0, t1 = _params(args, i, 8)
        assert int.from_bytes(ctypes.string_at(t0, 8), "little") == 1 << 20
        assert int.from_bytes(ctypes.string_at(t1, 8), "little") == 1 << 20
        assert _u64(_params(args, i, 3)[2]) == 4 * i


def test_maps_first_encoded_for_other_buffers_point_at_each_launchs_own():
    """The correctness draws launch the kernel first, on their own buffers: the timing sets' maps,
    launch 0's included, must not keep that address."""
    maps = FakeMaps(["A", "C"])
    LaunchArgs(maps, (1 << 30, 2 << 30, 3 << 30), (0, 0, 0), 1, 8, 8, 8)
    args = LaunchArgs(maps, (5 << 30, 6 << 30, 7 << 30), (128, 128, 128), 4, 8, 8, 8)
    assert len(maps.encoded) == 2
    for i in range(4):
        *_, ta, tc = _params(args, i, 8)
        assert int.from_bytes(ctypes.string_at(ta, 8), "little") == (5 << 30) + 128 * i
        assert int.from_bytes(ctypes.string_at(tc, 8), "little") == (7 << 30) + 128 * i
