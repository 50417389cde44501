"""`evo bench` stopped part-way (Ctrl-C, a `timeout -s INT`) still shows and stores what it timed."""
import logging

import pytest

from evo.archive import Archive
from evo.cli.hydra_app import compose
from evo.evaluation.evaluator import Evaluator
from evo.families import HOPPER
from evo.search.bench import run_bench


def test_an_interrupted_bench_prints_and_keeps_the_shapes_it_finished(tmp_path, monkeypatch, caplog, compile_cache):
    kernel = tmp_path / "k.cu"
    kernel.write_text(HOPPER.render(HOPPER.default))
    c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,256x256x256,1024x1024x1024]",
                      "search.progress=false", f"kernels=[{kernel}]", f"archive.path={tmp_path / 'b.sqlite'}"])
    real = Evaluator.evaluate

    def stopped_after_one(self, pairs, **kw):  # the interruption lands while the second kernel timing runs
        for i, e in enumerate(real(self, pairs, **kw)):
            if i == 1:
                raise KeyboardInterrupt
            yield e

    monkeypatch.setattr(Evaluator, "evaluate", stopped_after_one)
    with caplog.at_level(logging.INFO), pytest.raises(KeyboardInterrupt):
        run_bench(c, raw)
    text = caplog.text
    assert "interrupted: the 3 of 3 shapes whose libraries were timed, with 1 of 3 kernel timings" in text
    assert "k.cu_us" in text and "missing" in text  # the untimed kernel rows say so
    a = Archive.open(tmp_path / "b.sqlite", create=False, readonly=True)
    run = a.last_run()
    rows = a.get_state(run["id"], "bench_rows")
    a.close()
    assert run["status"] == "stopped"
    assert len(rows) == 3 and sum(r["kernel_k.cu_ms"] is not None for r in rows) == 1
    assert all(r["torch_ms"] for r in rows)
