import pytest

from evo.evaluation.static_checks import check_source
from evo.families import FAMILIES

GOOD = """#include <cuda_fp16.h>
// @evo grid = cdiv(N, 16), cdiv(M, 16)
// @evo block = 16, 16
extern "C" __global__ void hgemm(const half* __restrict__ A, const half* B, half *C, int M, int N, int K) {
    // printf("comments do not count");
    const char* s = "fopen(";
}
"""


def test_good_source_passes():
    assert check_source(GOOD) == []


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_sources_pass(name):
    fam = FAMILIES[name]
    for params in [fam.default, *fam.all_valid[:: max(1, len(fam.all_valid) // 20)]]:
        assert check_source(fam.render(params)) == [], params


@pytest.mark.parametrize("insert, rule, words", [
    ('printf("x");', "forbidden", "printf"),
    ('FILE* f = fopen("/etc/passwd", "r");', "forbidden", "file access"),
    ('system("rm -rf /");', "forbidden", "process"),
    ("cublasHgemm(0);", "forbidden", "library"),
    ("cudaStream_t s; cudaStreamCreate(&s);", "forbidden", "runtime API"),
    ("cudaGraphLaunch(0, 0);", "forbidden", "runtime API"),
    ("other<<<1, 1>>>();", "forbidden", "dynamic parallelism"),
    ("float* p = (float*)malloc(4);", "forbidden", "allocation"),
])
def test_forbidden_code_is_rejected_with_a_reason(insert, rule, words):
    src = GOOD.replace('    const char* s = "fopen(";', "    " + insert)
    rejections = check_source(src)
    assert any(r.rule == rule and words in r.reason for r in rejections), rejections
    assert all(r.line for r in rejections if r.rule == "forbidden")


def test_includes_come_from_the_allow_list():
    rejections = check_source("#include <stdio.h>\n#include <sys/socket.h>\n" + GOOD)
    assert [r.rule for r in rejections] == ["include", "include"]
    assert "stdio.h" in rejections[0].reason and rejections[0].line == 1


@pytest.mark.parametrize("spelling, line", [
    ('%:include "/tmp/secret.txt"', 2),  # the digraph of #
    ('#\\\ninclude "/tmp/secret.txt"', 2),  # a backslash-newline splice inside the directive
    ('#inc\\  \nlude "/tmp/secret.txt"', 2),  # gcc splices a backslash followed by spaces too
    ('#/* a comment\nover two lines */include "/tmp/secret.txt"', 2),
    ('// a comment ending in a trigraph ??/\n#include "/tmp/secret.txt"', 3),  # C++17 ignores trigraphs
    ('"??/";\n#include "/tmp/secret.txt"', 3),
    ('#import "/tmp/secret.txt"', 2),  # gcc's #import reads the file too
])
def test_an_include_spelt_as_the_preprocessor_reads_it_is_still_checked(spelling, line):
    """A hostile answer read a local file this way (nvcc included it, its text came back in the compile
    errors that repair prompts send to the API)."""
    rejections = check_source(GOOD.replace("#include <cuda_fp16.h>", "#include <cuda_fp16.h>\n" + spelling))
    assert any(r.rule == "include" and "/tmp/secret.txt" in r.reason and r.line == line for r in rejections), rejections


def test_line_numbers_survive_splices():
    src = GOOD.replace("// @evo block = 16, 16", "#define TWO_LINES 1 + \\\n  1\n// @evo block = 16, 16")
    src = src.replace('    const char* s = "fopen(";', '    printf("x");')
    (r,) = check_source(src)
    assert r.line == src.splitlines().index('    printf("x");') + 1


def test_include_through_a_macro_is_rejected():
    src = "#define HDR <stdio.h>\n#include HDR\n" + GOOD
    assert any("not a macro" in r.reason and r.line == 2 for r in check_source(src))


def test_host_code_and_main_are_rejected():
    assert any("host code" in r.reason for r in check_source(GOOD + "\n__host__ void f() {}\n"))
    assert any("main()" in r.reason for r in check_source(GOOD + "\nint main() { return 0; }\n"))


def test_missing_or_wrong_entry_point():
    assert any(r.rule == "abi" and "missing" in r.reason for r in check_source(GOOD.replace("hgemm", "gemm")))
    wrong = GOOD.replace("int M, int N, int K", "int M, int N")
    assert any(r.rule == "abi" and "parameters" in r.reason for r in check_source(wrong))
    float_out = GOOD.replace("half *C", "float* C")
    assert any(r.rule == "abi" for r in check_source(float_out))


def test_tensor_map_parameters_must_match_the_declaration():
    src = GOOD.replace("// @evo block = 16, 16", "// @evo block = 16, 16\n// @evo tma = A box(64, 64) swizzle(128)")
    assert any(r.rule == "abi" and "CUtensorMap" in r.reason for r in check_source(src))
    ok = src.replace("int M, int N, int K)", "int M, int N, int K, const __grid_constant__ CUtensorMap tmA)")
    assert check_source(ok) == []


def test_malformed_declaration_is_a_rejection():
    rejections = check_source(GOOD.replace("// @evo block = 16, 16", "// @evo block = sixteen"))
    assert rejections and rejections[0].rule == "declaration" and rejections[0].line == 3


def test_declarations_parse_safely_from_many_threads_at_once():
    """The compile stage runs static checks (which parse the launch declaration with `ast`) on a
    thread pool. CPython 3.11's parser can fail there now and then (SystemError: AST constructor
    recursion depth mismatch; about once in 1,500 calls in a search), so evo parses under a lock.
    This stress test checks 1,500 sources on 16 threads and must see no error."""
    import concurrent.futures as cf

    from evo.families import FAMILIES
    sources = []
    for family in ("hopper", "ampere", "simt"):
        fam = FAMILIES[family]
        sources += [fam.render(p) for p in fam.all_valid[:40]]
    with cf.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(check_source, sources * (1500 // len(sources))))
    assert len(results) >= 1400 and all(r == [] for r in results)


@pytest.mark.parametrize("hidden", ["\r#include \"/tmp/secret.txt\"", "\x00#include \"/tmp/secret.txt\"",
                                    "\ufeff#include \"/tmp/secret.txt\"", "\x0b#define X 1"])
def test_control_and_invisible_characters_are_refused(hidden):
    """A lone CR, a NUL or a BOM before # hid an include from the line-based checks; nvcc read it."""
    (r,) = check_source(GOOD.replace("#include <cuda_fp16.h>", "#include <cuda_fp16.h>\n// x" + hidden))
    assert r.rule == "characters" and "line 2" in r.reason


def test_windows_line_ends_are_fine_and_has_include_is_refused():
    assert check_source(GOOD.replace("\n", "\r\n")) == []
    deep = "".join(f"// line {i}\r\n" for i in range(1, 40)) + "// x\x00\r\n"
    (r,) = check_source(deep)
    assert r.rule == "characters" and "line 40" in r.reason  # counted in the text searched, CRLF or not
    src = GOOD.replace("#include <cuda_fp16.h>", '#include <cuda_fp16.h>\n#if __has_include("/etc/passwd")\n#endif')
    assert any("__has_include" in r.reason for r in check_source(src))
