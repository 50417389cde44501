"""The compile stage: nvcc to a cubin for sm_90a, in parallel, with a per-job timeout and a
content-addressed cache keyed by source + flags + nvcc version. A candidate's own compile options
(`evo.core.compile_options`, a whitelist) are a line of its source, so the key covers them.

`-Xptxas -v` is parsed into `Resources`; a compiler error is kept (trimmed) for repair prompts.
nvcc keeps the PTX it makes on the way (`--keep`), so whether the kernel may be launched as a programmatic
dependent by evo.dispatch (it waits for the grid before it first) and timed as one by the evaluator (and
signals no dependent early) is decided once, cached with the cubin.
nvcc runs in its own process group so that a timeout kills it with all its children, and at a lower CPU
priority than evo itself (NVCC_NICENESS).
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import replace
from functools import cache
from pathlib import Path

from evo.core.compile_options import OptionError, nvcc_flags
from evo.core.errors import CompileToolError
from evo.core.kernel import pdl_verdicts_in_ptx
from evo.core.records import CompileResult, Resources

DEFAULT_FLAGS = ("-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-Xptxas", "-v")
MAX_LOG_CHARS = 4000
# The version of the rule behind cached PDL verdicts (evo.core.kernel.pdl_verdicts_in_ptx): verdicts
# cached under another version are decided again, so that a tightened rule reaches cached kernels.
PDL_RULE = 3
# nvcc runs at a lower CPU priority than the rest of evo: a sweep compiles on every core while its GPU worker
# times kernels, and a worker's host thread waiting for a core can stall the GPU's timed work. Suspected, not
# yet measured, for the small shapes whose winners a sweep reads about 0.33 us a call slower than `evo bench`
# (docs/timing.md). Compiles lose nothing by it when nothing else wants the cores.
NVCC_NICENESS = 10


def without_ptxas_report(flags: tuple[str, ...] | list[str]) -> list[str]:
    """The flags without `-Xptxas -v` (the resource report the search reads; nothing else needs it)."""
    return [f for f in flags if f not in ("-Xptxas", "-v")]


@cache
def nvcc_version(nvcc: str = "nvcc") -> str:
    path = shutil.which(nvcc)
    if not path:
        raise CompileToolError(f"{nvcc} was not found on PATH: install the CUDA toolkit (13.0) or set compiler.nvcc")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"release [\d.]+, V([\d.]+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


_ENTRY_BLOCK = re.compile(r"Compiling entry function '(\w+)'")


def parse_ptxas(log: str, entry: str = "hgemm") -> Resources:
    """Numbers from `-Xptxas -v` output for one entry function."""
    lines = log.splitlines()
    start = next((i for i, ln in enumerate(lines) if (m := _ENTRY_BLOCK.search(ln)) and m.group(1) == entry), None)
    if start is None:
        return Resources()
    block = []
    for line in lines[start + 1:]:
        if _ENTRY_BLOCK.search(line):
            break
        block.append(line)
    text = "\n".join(block)

    def num(pattern: str) -> int:
        m = re.search(pattern, text)
        return int(m.group(1)) if m else 0

    return Resources(
        registers=num(r"Used (\d+) registers"), smem_static=num(r"(\d+) bytes smem"),
        stack=num(r"(\d+) bytes stack frame"), spill_stores=num(r"(\d+) bytes spill stores"),
        spill_loads=num(r"(\d+) bytes spill loads"), barriers=num(r"used (\d+) barriers"),
    )


_DIAGNOSTIC = re.compile(r"^(?P<file>[^\s:()]+?)(?:\((\d+)\)|:\d+(?::\d+)?):\s*(?:fatal )?(?:error|warning|remark|note)")
_TRUSTED_DIRS = ("/usr/include", "/usr/local/cuda", "/opt/nvidia")


def _own_diagnostics(lines: list[str]) -> list[str]:
    """Drop the diagnostics located in files other than the candidate and the CUDA and system headers
    (and the source lines quoted after them): a file a hostile source managed to include must not
    reach a repair prompt through the compile log."""
    kept, keep = [], True
    for ln in lines:
        m = _DIAGNOSTIC.match(ln)
        if m:
            where = m.group("file")
            keep = where == "kernel.cu" or where.startswith(_TRUSTED_DIRS) or "/cuda" in where
            if not keep:
                kept.append("[a diagnostic in another file, left out]")
        if keep:
            kept.append(ln)
    return kept


def trim_log(log: str, source_name: str) -> str:
    """Keep what a person (or a repair prompt) needs: errors first, no temp paths, no other files'
    text, bounded size."""
    log = log.replace(source_name, "kernel.cu")
    # ptxas's resource lines go (parse_ptxas keeps their numbers); its performance warnings stay, though
    # printed as "ptxas info" (C7514: wgmma serialized because other instructions read its accumulators)
    lines = _own_diagnostics([ln for ln in log.splitlines() if (not ln.startswith("ptxas info") or "Performance Loss"
                              in ln) and not re.match(r"\s+\d+ bytes", ln)])
    errors = [ln for ln in lines if "error" in ln.lower()]
    text = "\n".join(errors + [ln for ln in lines if ln not in errors]) if errors else "\n".join(lines)
    return text if len(text) <= MAX_LOG_CHARS else text[:MAX_LOG_CHARS] + "\n[... trimmed]"


class Compiler:
    """Compiles candidate sources to cubins; thread-safe; results cached on disk."""

    def __init__(self, *, cache_dir: str | os.PathLike | None = None, nvcc: str = "nvcc",
                 flags: tuple[str, ...] = DEFAULT_FLAGS, timeout_s: float = 180.0, workers: int = 0):
        self.nvcc = nvcc
        self.flags = tuple(flags)
        self.timeout_s = timeout_s
        self.cache_dir = Path(cache_dir or os.environ.get("EVO_CACHE_DIR") or Path.home() / ".cache" / "evo" / "nvcc")
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.version = nvcc_version(nvcc)
        self._pool = cf.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2, thread_name_prefix="nvcc")
        nice = shutil.which("nice")
        self._lower_priority = (nice, "-n", str(NVCC_NICENESS)) if nice else ()  # exec()s nvcc: same process

    def key(self, source: str) -> str:
        h = hashlib.sha256()
        for part in (source, "\0".join(self.flags), self.version):
            h.update(part.encode())
            h.update(b"\0\1")
        return h.hexdigest()[:32]

    def submit(self, source: str) -> cf.Future:
        return self._pool.submit(self.compile, source)

    def compile_many(self, sources: list[str]) -> list[CompileResult]:
        return [f.result() for f in [self.submit(s) for s in sources]]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def compile(self, source: str) -> CompileResult:
        key = self.key(source)
        cached = self._load(key)
        if cached:
            return cached
        result = self._run_nvcc(source, key)
        if result.status != "timeout":  # a timeout may pass on a quieter machine: retry next time
            self._store(result)
        return result

    def _run_nvcc(self, source: str, key: str) -> CompileResult:
        try:
            extra = nvcc_flags(source)  # the candidate's own whitelisted options (in its source, so in the key)
        except OptionError as e:
            return CompileResult("error", key, log=str(e))
        with tempfile.TemporaryDirectory(prefix="evo-nvcc-") as tmp:
            src, out = Path(tmp) / f"{key}.cu", Path(tmp) / f"{key}.cubin"
            src.write_text(source)
            cmd = [*self._lower_priority, self.nvcc, "-cubin", *self.flags, *extra, "--keep", "--keep-dir", tmp, "-o",
                   str(out), str(src)]
            start = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    cwd=tmp, start_new_session=True)
            try:
                log, _ = proc.communicate(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                return CompileResult("timeout", key, log=f"nvcc did not finish within {self.timeout_s:g} s",
                                     seconds=time.monotonic() - start)
            seconds = time.monotonic() - start
            ptx = Path(tmp) / f"{key}.ptx"  # what --keep leaves: the PTX the cubin is assembled from
            log = log.replace(str(ptx), "kernel.ptx")  # ptxas names it in its errors
            if proc.returncode != 0 or not out.exists():
                return CompileResult("error", key, log=trim_log(log, str(src)) or f"nvcc exited with {proc.returncode}",
                                     seconds=seconds)
            dispatch, timing = pdl_verdicts_in_ptx(ptx.read_text(errors="replace")) if ptx.exists() else (None, None)
            return CompileResult("ok", key, cubin=out.read_bytes(), resources=parse_ptxas(log),
                                 log=trim_log(log, str(src)), seconds=seconds, pdl_timing=timing,
                                 pdl_dispatch=dispatch)

    def ptx(self, source: str) -> str:
        """The PTX nvcc makes of a source with this compiler's flags and the source's own options
        (not cached: the PDL verdicts read it once for a cache entry from before they were kept, and
        tests read it). Raises CompileToolError on failure."""
        flags = without_ptxas_report(self.flags)
        with tempfile.TemporaryDirectory(prefix="evo-ptx-") as tmp:
            src, out = Path(tmp) / "k.cu", Path(tmp) / "k.ptx"
            src.write_text(source)
            try:
                proc = subprocess.run([self.nvcc, "-ptx", *flags, *nvcc_flags(source), "-o", str(out), str(src)],
                                      capture_output=True, text=True, cwd=tmp, timeout=self.timeout_s)
            except (OptionError, subprocess.TimeoutExpired) as e:
                raise CompileToolError(f"nvcc -ptx: {e}") from e
            if proc.returncode != 0 or not out.exists():
                raise CompileToolError(f"nvcc -ptx failed: {trim_log(proc.stdout + proc.stderr, str(src))}")
            return out.read_text()

    def pdl_timing(self, source: str, r: CompileResult) -> bool:
        """Whether the compiled kernel may be timed as a programmatic dependent launch: the compile's
        verdict, or for a cache entry made before the verdict (or this version of its rule) was
        recorded, nvcc -ptx's once, then written into the entry. Raises CompileToolError when nvcc
        cannot make the PTX."""
        return r.pdl_timing if r.pdl_timing is not None else self._pdl_verdicts(source, r)[1]

    def pdl_dispatch(self, source: str, r: CompileResult) -> bool:
        """Whether evo.dispatch may launch the compiled kernel as a programmatic dependent (its PTX waits
        first: evo export's manifest), known as pdl_timing is."""
        return r.pdl_dispatch if r.pdl_dispatch is not None else self._pdl_verdicts(source, r)[0]

    def _pdl_verdicts(self, source: str, r: CompileResult) -> tuple[bool, bool]:
        """Both PDL verdicts from nvcc -ptx, written into r's cache entry where r compiled."""
        dispatch, timing = pdl_verdicts_in_ptx(self.ptx(source))
        if r.ok:
            try:
                self._store_meta(replace(r, pdl_timing=timing, pdl_dispatch=dispatch))
            except OSError:  # the verdicts hold even where the cache cannot take them
                pass
        return dispatch, timing

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.cache_dir / f"{key}.json", self.cache_dir / f"{key}.cubin"

    def _load(self, key: str) -> CompileResult | None:
        meta_path, cubin_path = self._paths(key)
        try:
            meta = json.loads(meta_path.read_text())
            cubin = cubin_path.read_bytes() if meta["status"] == "ok" else None
        except (OSError, ValueError, KeyError):
            return None
        resources = Resources(**meta["resources"]) if meta.get("resources") else None
        current = meta.get("pdl_rule") == PDL_RULE
        return CompileResult(meta["status"], key, cubin, resources, meta.get("log", ""), meta.get("seconds", 0.0), True,
                             meta.get("pdl_timing") if current else None, meta.get("pdl_dispatch") if current else None)

    def _store(self, r: CompileResult) -> None:
        if r.cubin is not None:
            _atomic_write(self._paths(r.key)[1], r.cubin)
        self._store_meta(r)

    def _store_meta(self, r: CompileResult) -> None:
        meta = {"status": r.status, "log": r.log, "seconds": r.seconds,
                "resources": r.resources.to_json() if r.resources else None,
                "pdl_timing": r.pdl_timing, "pdl_dispatch": r.pdl_dispatch, "pdl_rule": PDL_RULE}
        _atomic_write(self._paths(r.key)[0], json.dumps(meta).encode())


def _atomic_write(path: Path, data: bytes) -> None:
    """Write through a temporary file of its own (unique per writer, threads included), then rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
