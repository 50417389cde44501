import json
import os
import subprocess
import time

from evo.evaluation.compiler import PDL_RULE, Compiler, parse_ptxas
from evo.families import FAMILIES

BROKEN = """#include <cuda_fp16.h>
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
    int x = undefined_thing + 1;
}
"""


def test_simt_kernel_compiles_with_resources(compiler):
    r = compiler.compile(FAMILIES["simt"].render(FAMILIES["simt"].default))
    assert r.ok and r.cubin[:4] == b"\x7fELF"
    assert r.resources.registers > 0
    assert r.resources.smem_static == (64 + 64) * 16 * 4  # the two float tiles of the default config
    assert r.resources.spill_stores == 0 and r.resources.stack == 0


def test_hopper_wgmma_kernel_compiles_for_sm90a(compiler):
    r = compiler.compile(FAMILIES["hopper"].render(FAMILIES["hopper"].default))
    assert r.ok, r.log
    assert 100 < r.resources.registers <= 255
    assert r.resources.spill_stores == 0
    assert b"sm_90a" in r.cubin or r.cubin[:4] == b"\x7fELF"


def test_ampere_split_k_kernel_compiles(compiler):
    params = dict(FAMILIES["ampere"].default, SPLIT_K=4)
    r = compiler.compile(FAMILIES["ampere"].render(params))
    assert r.ok, r.log


def test_skinny_kernels_compile_without_spills(compiler):
    fam = FAMILIES["skinny"]
    for change in (dict(MP=8, SPLIT_K=12), dict(MP=64, BN=256, WARPS=4, STAGES=3, SPLIT_K=3), dict(MP=32, BK=32)):
        r = compiler.compile(fam.render(dict(fam.default, **change)))
        assert r.ok, r.log
        assert r.resources.spill_stores == 0 and r.resources.stack == 0, change


def test_broken_kernel_keeps_the_error_text(compiler):
    r = compiler.compile(BROKEN)
    assert r.status == "error"
    assert "undefined_thing" in r.log and "kernel.cu(3)" in r.log
    assert "/tmp" not in r.log  # no temporary paths in what a repair prompt sees


def test_results_are_cached_by_content(compiler):
    src = FAMILIES["simt"].render(dict(FAMILIES["simt"].default, BK=8))
    first = compiler.compile(src)
    second = compiler.compile(src)
    assert second.cached and second.cubin == first.cubin and second.resources == first.resources
    assert compiler.key(src) != compiler.key(src + "\n")


def test_a_hanging_compile_is_killed(tmp_path):
    c = Compiler(cache_dir=tmp_path, timeout_s=0.3)
    start = time.monotonic()
    r = c.compile(FAMILIES["hopper"].render(dict(FAMILIES["hopper"].default, STAGES=3)))
    assert r.status == "timeout" and "did not finish" in r.log
    assert time.monotonic() - start < 10
    time.sleep(0.5)
    leftover = subprocess.run(["pgrep", "-f", r.key], capture_output=True, text=True).stdout.split()
    assert [p for p in leftover if int(p) != os.getpid()] == []
    assert not (tmp_path / f"{r.key}.json").exists()  # timeouts are not cached
    c.close()


def test_parse_ptxas_picks_the_entry_function():
    log = """ptxas info    : Compiling entry function 'other' for 'sm_90a'
ptxas info    : Used 12 registers
ptxas info    : Compiling entry function 'hgemm' for 'sm_90a'
ptxas info    : Function properties for hgemm
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
"""
    r = parse_ptxas(log)
    assert (r.registers, r.smem_static, r.stack, r.spill_stores, r.spill_loads, r.barriers) == (168, 1024, 16, 8, 4, 1)


def test_the_log_keeps_no_text_of_other_files():
    """A file a hostile source included must not reach a repair prompt through the compile errors."""
    from evo.evaluation.compiler import trim_log
    log = ('/tmp/w/src.cu(12): error: identifier "foo" is undefined\n      foo = 1;\n      ^\n'
           '/home/u/.secrets(1): error: identifier "TOPSECRET" is undefined\n  API_KEY=sk-TOPSECRET\n  ^\n'
           '/usr/local/cuda/include/cuda_fp16.hpp(100): warning: a header warning\n')
    out = trim_log(log, "/tmp/w/src.cu")
    assert "TOPSECRET" not in out and ".secrets" not in out and "another file, left out" in out
    assert 'kernel.cu(12): error: identifier "foo"' in out and "foo = 1;" in out and "cuda_fp16.hpp(100)" in out


WAITS = """#include <cuda_fp16.h>
extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  C[threadIdx.x] = A[threadIdx.x];
}
"""


def test_the_compile_decides_from_its_ptx_whether_the_kernel_is_timed_as_a_dependent_launch(tmp_path):
    """The PDL timing verdict comes from the PTX nvcc kept while making the cubin, and is cached with it:
    yes for a kernel that waits for the grid before it first; no for one that reads first, or that waits
    first but signals its dependents early (in replays that would start its own next launch sooner). A
    cache entry from before the verdict was recorded says it does not know."""
    early = WAITS.replace("  asm volatile", "  C[0] = A[1];\n  asm volatile")
    signals = [WAITS.replace("  C[threadIdx.x]", f'  {signal}\n  C[threadIdx.x]') for signal in (
        'asm volatile("griddepcontrol.launch_dependents;");',
        'asm volatile("griddepcontrol .launch_dependents;");',  # spellings ptxas takes as the same
        'asm volatile("griddepcontrol\\n.launch_dependents;");',
        "cudaTriggerProgrammaticLaunchCompletion();",
        'asm volatile(".pragma \\"/*\\";\\n griddepcontrol.launch_dependents;\\n .pragma \\"*/\\";");')]  # in a "comment"
    c = Compiler(cache_dir=tmp_path, timeout_s=300)
    try:
        sources = (WAITS, early, *signals)
        fresh = [c.compile(src) for src in sources]
        assert [(r.ok, r.cached, r.pdl_timing) for r in fresh] == [(True, False, True)] + [(True, False, False)] * 6
        # evo.dispatch's verdict (evo export): waiting first is enough, an early signal included; the
        # "comment" strings are refused either way
        assert [r.pdl_dispatch for r in fresh] == [True, False, True, True, True, True, False]
        assert [c.compile(src).pdl_timing for src in sources] == [True] + [False] * 6  # from the cache
        meta = tmp_path / f"{c.key(WAITS)}.json"
        old = json.loads(meta.read_text())
        assert old["pdl_rule"] == PDL_RULE
        del old["pdl_timing"], old["pdl_rule"]
        meta.write_text(json.dumps(old))
        again = c.compile(WAITS)
        assert again.cached and again.ok and again.pdl_timing is None
        meta.write_text(json.dumps({**old, "pdl_timing": True, "pdl_rule": PDL_RULE - 1}))  # by an older rule
        assert c.compile(WAITS).pdl_timing is None
        meta.write_text(json.dumps({**old, "pdl_timing": True}))  # older still: no rule recorded
        assert c.compile(WAITS).pdl_timing is None
    finally:
        c.close()


def test_a_ptxas_error_names_no_temporary_file(compiler):
    r = compiler.compile(WAITS.replace("  C[threadIdx.x]", '  asm volatile("no.such.instruction;");\n  C[threadIdx.x]'))
    assert r.status == "error" and "kernel.ptx" in r.log and "/tmp" not in r.log, r.log


def test_export_takes_both_pdl_verdicts_from_the_compile_cache(tmp_path, monkeypatch):
    """`evo export` reads whether evo.dispatch may launch a kernel as a programmatic dependent from the
    compile cache, where the search compiled it: no nvcc -ptx. A cache entry from before that verdict
    was kept is decided once by nvcc -ptx, and the entry then keeps it."""
    from evo.export import compile_all
    early = WAITS.replace("  asm volatile", "  C[0] = A[1];\n  asm volatile")
    c = Compiler(cache_dir=tmp_path, timeout_s=300)
    try:
        for src in (WAITS, early):
            assert c.compile(src).ok
        calls = []
        real_ptx = c.ptx
        monkeypatch.setattr(c, "ptx", lambda source: calls.append(source) or real_ptx(source))
        verdicts = compile_all(c, {"waits": WAITS, "early": early})
        assert {k: (r.ok, r.cached, pdl) for k, (r, pdl) in verdicts.items()} == {
            "waits": (True, True, True), "early": (True, True, False)}
        assert calls == []
        meta = tmp_path / f"{c.key(WAITS)}.json"
        old = json.loads(meta.read_text())
        del old["pdl_dispatch"]
        meta.write_text(json.dumps(old))
        assert compile_all(c, {"waits": WAITS})["waits"][1] is True and calls == [WAITS]
        assert json.loads(meta.read_text())["pdl_dispatch"] is True and c.compile(WAITS).pdl_dispatch is True
        assert compile_all(c, {"waits": WAITS})["waits"][1] is True and calls == [WAITS]  # no second nvcc -ptx
    finally:
        c.close()


def test_family_kernels_call_nothing_outside_themselves_and_a_cubin_is_read_as_elf(compiler):
    """What cubin_calls refuses never occurs in the families' own kernels (no undefined functions);
    bytes that are not a cubin are refused with a reason, not an exception."""
    from evo.evaluation.cubin_calls import outside_calls, undefined_functions
    for name in ("simt", "ampere", "hopper", "skinny"):
        r = compiler.compile(FAMILIES[name].render(FAMILIES[name].default))
        assert r.ok and undefined_functions(r.cubin) == [] and outside_calls(r.cubin) is None, name
    assert "could not be read" in outside_calls(b"\x7fELF\x02\x01" + b"\0" * 10)
    assert "could not be read" in outside_calls(b"not an elf file")


def test_a_cubin_that_is_not_what_nvcc_writes_is_refused_with_a_reason_at_once(compiler):
    """Bytes from a damaged or planted cache entry: tables past the end of the file, offsets near 2^64, a
    zero entry size, a string table out of range, a name past the end. Each is a reason, none raises, and
    none takes long (the one symbol table is read once)."""
    import struct
    import time

    from evo.evaluation.cubin_calls import outside_calls, undefined_functions
    good = compiler.compile(FAMILIES["ampere"].render(FAMILIES["ampere"].default)).cubin
    shoff, = struct.unpack_from("<Q", good, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", good, 0x3A)
    symtab = next(i for i in range(shnum) if struct.unpack_from("<I", good, shoff + i * shentsize + 4)[0] == 2)
    at = shoff + symtab * shentsize

    def patched(offset: int, fmt: str, value: int, base: bytes = good) -> bytes:
        b = bytearray(base)
        struct.pack_into(fmt, b, offset, value)
        return bytes(b)

    bad = [patched(0x28, "<Q", 2**64 - 1), patched(0x3C, "<H", 65535), patched(0x3A, "<H", 0),
           patched(at + 0x18, "<Q", 2**63), patched(at + 0x38, "<Q", 0), patched(at + 0x28, "<I", 65535),
           patched(at + 0x20, "<Q", 2**40), good[:len(good) // 2]]
    start = time.monotonic()
    for b in bad:
        reason = outside_calls(b)
        assert reason is not None and "could not be read" in reason
    assert time.monotonic() - start < 1.0
    assert undefined_functions(good) == []


def test_nvcc_runs_at_a_lower_cpu_priority_than_evo(tmp_path):
    """A sweep compiles on every core beside the GPU worker: nvcc is started niced (NVCC_NICENESS) so that
    the worker's host thread is not the one waiting for a core. A stand-in nvcc reports its niceness."""
    from evo.evaluation.compiler import NVCC_NICENESS
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\n"
                    "if [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 13.0, V13.0.1'; exit 0; fi\n"
                    "echo \"niceness $(nice)\"; exit 1\n")
    fake.chmod(0o755)
    c = Compiler(cache_dir=tmp_path / "cache", nvcc=str(fake))
    try:
        r = c.compile(FAMILIES["simt"].render(FAMILIES["simt"].default))
    finally:
        c.close()
    assert r.status == "error"
    assert f"niceness {min(19, os.nice(0) + NVCC_NICENESS)}" in r.log, r.log
