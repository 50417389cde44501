"""CPU simulations of two attacks against evo's checks (run from /tmp/rt1 with its venv)."""
from types import SimpleNamespace
import torch
from evo.evaluation import gpu_buffers
from evo.evaluation.gpu_buffers import TimingSets
from evo.dispatch import verify

# 1. look-ahead in a sealed chunk: launch 0 computes the W sets from its own on (it can reach them:
#    launch i's buffers are set i of one batched allocation), launches 1..W-1 do nothing.
gpu_buffers.TIMING_BYTES = 1 << 20
h = SimpleNamespace(info=SimpleNamespace(l2_bytes=1 << 18), stream=None, clock=None, device="cpu")
s = TimingSets(h, 24, 40, 72, ["rotating"])
W = 4
flatA, flatB, flatC = s.A.view(-1), s.B.view(-1), s.C.view(-1)   # what a pointer into set i reaches
mk, kn, mn = 24 * 72, 72 * 40, 24 * 40
work = 0
for chunk in range(3):
    s.refresh()
    for i in range(s.n):                       # the chunk: launch i on set i, in order
        if torch.isnan(s.C[i]).any():          # not done by an earlier launch of this chunk
            for j in range(i, min(i + W, s.n)):  # "leader": its own set and the next ones, by stride
                a = flatA[j * mk:(j + 1) * mk].view(24, 72); b = flatB[j * kn:(j + 1) * kn].view(72, 40)
                flatC[j * mn:(j + 1) * mn] = (a.float() @ b.float()).half().view(-1)
            work += 1
    print(f"chunk {chunk}: launches {s.n}, launches that did work {work}, check ->", s.check_outputs(full=True))
    work = 0

# 2. evo export --verify: the reference is taken from a and b after the call
def rewrite(a, b, out=None):
    b[1:] = 0
    return (a[:, :1].float() * b[:1].float()).half()
real_randn = torch.randn
verify.torch.randn = lambda *a, device=None, **k: real_randn(*a, **k)  # CPU
print("verify._correct of an input-rewriting kernel:", verify._correct(SimpleNamespace(matmul=rewrite), 64, 256, [3, 5, 7, 100]))
