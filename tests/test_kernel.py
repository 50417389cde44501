import pytest

from evo.core.errors import DeclarationError
from evo.core.kernel import Candidate, LaunchError, parse_declaration, source_hash
from evo.core.shapes import Shape

SRC = """
#include <cuda_fp16.h>
// @evo grid     = cdiv(N, 128), cdiv(M, 64), 1
// @evo block    = 256
// @evo smem     = 4 * 1024
// @evo requires = K % 8 == 0
// @evo requires = N >= 8
// @evo tma      = A box(64, 128) swizzle(128)
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {}
"""


def test_launch_for_a_shape():
    decl = parse_declaration(SRC)
    launch = decl.launch_for(Shape(77, 4096, 4096))
    assert launch.grid == (32, 2, 1) and launch.block == (256, 1, 1) and launch.smem == 4096
    assert launch.cluster is None
    (tm,) = launch.tensor_maps
    assert tm.operand == "A" and tm.dims == (4096, 77) and tm.box == (64, 128) and tm.swizzle == 128


def test_requires_decides_support():
    decl = parse_declaration(SRC)
    assert decl.supports(Shape(77, 4096, 4096))
    assert not decl.supports(Shape(77, 4096, 4095))
    assert not decl.supports(Shape(77, 4, 4096))


@pytest.mark.parametrize("line, message", [
    ("// @evo cluster = cdiv(N, 128), __import__('os')", "only the functions"),
    ("// @evo grid = 1", "declared twice"),
    ("// @evo warp = 4", "unknown key"),
    ("// @evo block 256", "must read"),
    ("// @evo tma = D box(1, 2)", "tma must read"),
    ("// @evo tma = A box(64, 64) swizzle(100)", "swizzle must be"),
    ("// @evo cluster = 1, 2, 3, 4", "takes 1 to 3"),
])
def test_malformed_declaration_names_the_line(line, message):
    src = SRC.replace("// @evo block    = 256", "// @evo block    = 256\n" + line)
    with pytest.raises(DeclarationError, match=message) as info:
        parse_declaration(src)
    assert info.value.line == 5


def test_missing_grid_is_an_error():
    with pytest.raises(DeclarationError, match="no '// @evo grid"):
        parse_declaration("// @evo block = 32\n")


def test_impossible_launch_is_refused_for_the_shape():
    src = SRC.replace("// @evo block    = 256", "// @evo block    = 2048")
    with pytest.raises(LaunchError, match="threads"):
        parse_declaration(src).launch_for(Shape(64, 64, 64))
    src = SRC.replace("// @evo smem     = 4 * 1024", "// @evo smem     = 300000")
    with pytest.raises(LaunchError, match="shared memory"):
        parse_declaration(src).launch_for(Shape(64, 64, 64))


def test_cluster_must_divide_grid():
    src = SRC.replace("// @evo block    = 256", "// @evo block    = 256\n// @evo cluster = 3, 1, 1")
    with pytest.raises(LaunchError, match="multiple of cluster"):
        parse_declaration(src).launch_for(Shape(64, 4096, 64))


def test_candidates_are_identified_by_content():
    a = Candidate.make(SRC, family="x", params={"b": 1, "a": 2})
    b = Candidate.make(SRC, family="y")
    assert a.id == b.id == source_hash(SRC)
    assert a.params == {"a": 2, "b": 1}
    assert Candidate.make(SRC + " ").id != a.id
