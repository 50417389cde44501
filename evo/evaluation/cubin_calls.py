"""What a compiled kernel calls outside itself, read from its cubin.

The static checks read the source, and the preprocessor can hide a name from them: `#define P printf`
or token pasting (`#define J(a,b) a##b`, then `J(pri,ntf)`). The cubin cannot: candidates compile
without `-rdc`, so a kernel of its own code leaves no function undefined, and every call into the
device runtime (printf's `vprintf`, device `malloc` and `free`, `__assertfail`, which prints as well) stays an
undefined function symbol for the driver to bind at load time. Those are refused, whatever the
source looked like. (Device-side launches do not get this far: without `-rdc` they fail to compile.)
The cubin comes from nvcc, or from the compile cache on disk, so the reader is bounded against bytes
that are not what nvcc writes: it refuses them with a reason and never reads past them.
"""
from __future__ import annotations

import struct

ALLOWED: frozenset[str] = frozenset()  # none: the families' kernels call nothing outside themselves
_SHT_SYMTAB, _STB_GLOBAL, _STB_WEAK, _STT_FUNC, _SHN_UNDEF = 2, 1, 2, 2, 0
_SHDR_SIZE, _SYM_SIZE = 64, 24  # an ELF64 section header and symbol


def undefined_functions(cubin: bytes) -> list[str]:
    """The names of the functions a cubin (a 64-bit little-endian ELF) uses but does not define.
    Raises ValueError for bytes that are not such a file, or whose tables lie outside it."""
    if len(cubin) < 64 or cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file: not a cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", cubin, 0x3A)
    if shentsize < _SHDR_SIZE or shoff + shnum * shentsize > len(cubin):
        raise ValueError("its section headers lie outside the file")
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    symtab = next((h for h in sections if h[1] == _SHT_SYMTAB), None)  # an ELF file has one: read one
    if symtab is None:
        return []
    _, _, _, _, offset, size, link, _, _, entsize = symtab
    if entsize < _SYM_SIZE or offset + size > len(cubin) or link >= shnum:
        raise ValueError("its symbol table lies outside the file")
    strings = sections[link][4]
    names = set()
    for j in range(size // entsize):
        name, info, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", cubin, offset + j * entsize)
        if shndx == _SHN_UNDEF and info >> 4 in (_STB_GLOBAL, _STB_WEAK) and info & 0xF == _STT_FUNC:
            start = strings + name
            end = cubin.find(b"\0", start)
            if start >= len(cubin) or end < 0:
                raise ValueError("a symbol's name lies outside the file")
            names.add(cubin[start:end].decode(errors="replace"))
    return sorted(names)


def outside_calls(cubin: bytes, *, unreadable_ok: bool = False) -> str | None:
    """Why a compiled candidate is refused for what it calls outside itself, for a repair prompt; None
    if it calls nothing it may not. Bytes that cannot be read as a cubin are refused too, unless
    `unreadable_ok` (evo.dispatch: the driver that loads them is the judge of those)."""
    try:
        calls = [n for n in undefined_functions(cubin) if n not in ALLOWED]
    except (ValueError, struct.error, IndexError, OverflowError) as e:
        return None if unreadable_ok else f"the compiled kernel could not be read ({e})"
    if not calls:
        return None
    return (f"the compiled kernel calls {', '.join(calls)} from the device runtime: printf, assert, device "
            "malloc/free and the like are not allowed in a candidate, however they are spelled (macros "
            "included); remove them")
