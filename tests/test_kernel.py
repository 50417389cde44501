import pytest

from evo.core.errors import DeclarationError
from evo.core.kernel import Candidate, LaunchError, parse_declaration, source_hash, waits_first_in_ptx
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


PTX = """.visible .entry hgemm(
    .param .u64 hgemm_param_0
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<9>;
    ld.param.u64 %rd1, [hgemm_param_0];
    mov.u32 %r1, %tid.x;
    setp.ne.s32 %p1, %r1, 0;
    @%p1 bra $L__BB0_2;
    PROLOGUE
$L__BB0_2:
    bar.sync 0;
    griddepcontrol.wait;
    ld.global.u32 %r5, [%rd1];
    ret;
}
"""


@pytest.mark.parametrize("prologue,waits", [
    ("mbarrier.init.shared::cta.b64 [%r2], %r3;\n    fence.mbarrier_init.release.cluster;", True),
    ("ld.shared::cta.u32 %r4, [%r2];", True),  # `::` is not a label
    ("prefetch.tensormap [%rd1];", True),
    ("ld.global.u32 %r4, [%rd1];", False),
    ("ld.u32 %r4, [%rd1];", False),  # generic: may be global
    ("st.global.u32 [%rd1], %r1;", False),
    ("atom.global.add.u32 %r4, [%rd1], 1;", False),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1, {%r1, %r1}], [%r3];",
     False),
    ("call.uni f, ();", False),
    ("bra.uni $L__BB0_9;", False),  # to a label that is not there
    ("{ .reg .b64 %t;\n    cvta.to.shared.u64 %t, %rd1; }", True),  # a scoping block of inline asm
])
def test_the_pdl_check_follows_every_path_to_the_wait(prologue, waits):
    """What may run before griddepcontrol.wait: register work, parameters, shared memory, barriers,
    fences, tensor-map prefetches, on every path; any global or generic access, call or unknown branch
    target makes the kernel wait too late."""
    assert waits_first_in_ptx(PTX.replace("PROLOGUE", prologue)) is waits


def test_the_pdl_check_sees_a_path_around_the_wait():
    loop = PTX.replace("PROLOGUE", "bra.uni $L__BB0_3;")
    loop = loop.replace("    ret;\n}", "$L__BB0_3:\n    ld.global.u32 %r6, [%rd1];\n    bra.uni $L__BB0_2;\n}")
    assert not waits_first_in_ptx(loop)  # thread 0 jumps past the wait to a load, then loops back
    never = PTX.replace("PROLOGUE", "")
    assert not waits_first_in_ptx(never.replace("    griddepcontrol.wait;\n", ""))  # never waits at all
    guarded = PTX.replace("PROLOGUE", "")
    assert not waits_first_in_ptx(guarded.replace("    griddepcontrol.wait;", "    @%p1 griddepcontrol.wait;"))
