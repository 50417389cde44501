"""`evo bench`'s table names every given kernel apart: files that share a name, or names alike once cut."""
import pytest

from evo.core.errors import ConfigError
from evo.search.bench import format_bench, load_kernels

SOURCE = 'extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {}\n'


def _row(times: dict[str, float]) -> dict:
    return {"M": 64, "N": 64, "K": 64, "mode": "rotating", "gflop": 0.5, "floor_ms": 0.001, "clock_mhz": 1980.0,
            "torch_ms": 0.004, **{f"kernel_{k}_ms": ms for k, ms in times.items()}}


def test_files_that_share_a_name_are_named_by_their_paths(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    paths = [str(tmp_path / "a" / "k.cu"), str(tmp_path / "b" / "k.cu"), str(tmp_path / "other.cu"),
             str(tmp_path / "elite")]  # the name of kernels_of's column
    for p in paths:
        open(p, "w").write(SOURCE)
    names = [k.params["file"] for k in load_kernels(paths)]
    assert names == [paths[0], paths[1], "other.cu", paths[3]]
    monkeypatch.chdir(tmp_path)
    for twice in ([paths[2], paths[2]], ["./other.cu", "other.cu"], ["a/../other.cu", paths[2]]):
        with pytest.raises(ConfigError, match="given 2 times"):
            load_kernels(twice)


def test_kernel_columns_stay_apart_when_their_names_are_long():
    short = ["split4_atomic.cu", "split4_atomic_pair.cu"]
    text = format_bench([_row({short[0]: 0.002, short[1]: 0.003})], ["torch"], short)
    header = text.splitlines()[0]
    assert "split4_atomic_us" in header and "split4_atomic_pair_us" in header
    alike = ["a_very_long_common_prefix_then_same_tail_1.cu", "another_long_prefix_then_same_tail_1.cu"]
    text = format_bench([_row({alike[0]: 0.002, alike[1]: 0.003})], ["torch"], alike)
    assert "k1_us" in text.splitlines()[0] and "k2_us" in text.splitlines()[0]
    assert f"k1: {alike[0]}" in text and f"k2: {alike[1]}" in text
    assert "2.00" in text and "3.00" in text  # each kernel's own time in its own column
    like_a_library = ["torch.cu", "floor.cu"]  # would read torch_us and floor_us, as the fixed columns do
    text = format_bench([_row({like_a_library[0]: 0.002, like_a_library[1]: 0.003})], ["torch"], like_a_library)
    assert "k1_us" in text.splitlines()[0] and "k1: torch.cu" in text and "k2: floor.cu" in text
