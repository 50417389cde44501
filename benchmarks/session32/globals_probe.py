"""Session 32: does loading modules with a large `__device__` global put a worker into the slow launch mode?

Session 31's run 2 saw the step at the third job whose module carried split-K's 33.8 MB of `__device__`
workspace (`run2/`); `run3.sh` separates split-K's code paths. This probe takes the split-K code out
altogether: one worker (a sweep's settings, GPU 0) times torch and cuBLASLt on two small shapes, then
evaluates the simt family's default kernel on 512x512x512 `--steps` times, each time with a comment that
makes it a new module and, with `--mib 33.8`, one unused `__device__` float array of that size; the
libraries are timed again after each job. A step after the third job with the array and none without it
names the globals.

    python globals_probe.py --mib 33.8 [--steps 5]      (on the GPU machine, from /tmp)
    python globals_probe.py --mib 0                     (the control: the same jobs without the array)
"""
import argparse

from mode_trigger import probe_steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, required=True, help="size of the unused __device__ array (0: none)")
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    from evo.core.kernel import Candidate
    from evo.core.shapes import Shape
    from evo.families import SIMT

    floats = int(a.mib * 2**20 / 4)
    base = SIMT.render(SIMT.default)

    def jobs():
        for step in range(1, a.steps + 1):
            extra = f"\n// globals probe, job {step}\n" + (f"__device__ float evo_probe_big[{floats}];\n" if floats else "")
            kernel = Candidate.make(base + extra, family="simt", params=SIMT.default, operator="probe")
            yield f"simt default + {a.mib:g} MiB global", kernel, Shape(512, 512, 512)

    restarts = probe_steps(jobs(), pdl=False, heading="job", width=44)
    print(f"worker restarts: {restarts}; array {a.mib:g} MiB ({floats} floats)")


if __name__ == "__main__":
    main()
