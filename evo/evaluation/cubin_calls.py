"""What a compiled kernel calls outside itself, read from its cubin.

The static checks read the source, and the preprocessor can hide a name from them: `#define P printf`
or token pasting (`#define J(a,b) a##b`, then `J(pri,ntf)`). The cubin cannot: candidates compile
without `-rdc`, so a kernel of its own code leaves no function undefined, and every call into the
device runtime (printf's `vprintf`, device `malloc` and `free`, device-side launches) stays an
undefined function symbol for the driver to bind at load time. Those are refused, whatever the
source looked like. `__assertfail` (a failed `assert`) is allowed: it only stops the kernel, as a fault.
"""
from __future__ import annotations

import struct

ALLOWED = frozenset({"__assertfail"})
_SHT_SYMTAB, _STB_GLOBAL, _STB_WEAK, _STT_FUNC, _SHN_UNDEF = 2, 1, 2, 2, 0


def undefined_functions(cubin: bytes) -> list[str]:
    """The names of the functions a cubin (a 64-bit little-endian ELF) uses but does not define."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file: not a cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = []
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != _SHT_SYMTAB or not entsize:
            continue
        strings = sections[link][4]
        for j in range(size // entsize):
            name, info, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", cubin, offset + j * entsize)
            if shndx == _SHN_UNDEF and info >> 4 in (_STB_GLOBAL, _STB_WEAK) and info & 0xF == _STT_FUNC:
                start = strings + name
                names.append(cubin[start:cubin.index(b"\0", start)].decode(errors="replace"))
    return sorted(set(names))


def outside_calls(cubin: bytes) -> str | None:
    """Why a compiled candidate is refused for what it calls outside itself, for a repair prompt; None
    if it calls nothing it may not."""
    try:
        calls = [n for n in undefined_functions(cubin) if n not in ALLOWED]
    except (ValueError, struct.error, IndexError) as e:
        return f"the compiled kernel could not be read ({e})"
    if not calls:
        return None
    return (f"the compiled kernel calls {', '.join(calls)} from the device runtime: printf, device malloc/free "
            "and device-side launches are not allowed in a candidate, however they are spelled (macros "
            "included); remove them")
