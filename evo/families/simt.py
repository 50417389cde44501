"""Family "simt": the plain tiled fallback, correct for every shape."""
from evo.families._family import Family, Params


def _problem(p: Params) -> str | None:
    if p["TM"] > p["BM"] or p["TN"] > p["BN"]:
        return "thread tile larger than the block tile"
    threads = (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])
    if not 32 <= threads <= 1024 or threads % 32:
        return f"{threads} threads per block: must be a multiple of 32 in 32..1024"
    if (p["BM"] + p["BN"]) * p["BK"] * 4 > 48 * 1024:
        return "static shared memory above 48 KiB"
    return None


SIMT = Family(
    name="simt",
    description="tiled CUDA-core kernel, fp32 FMA; any shape",
    space={"BM": (16, 32, 64, 128), "BN": (16, 32, 64, 128), "BK": (8, 16, 32), "TM": (1, 2, 4, 8), "TN": (1, 2, 4, 8)},
    template="simt.cu",
    _problem=_problem,
    _derive=lambda p: {"THREADS": str((p["BM"] // p["TM"]) * (p["BN"] // p["TN"]))},
    default={"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4},
)
