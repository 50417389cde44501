"""What a prompt tells the model: the parent's time at the target shape (or that it was not measured
there), earlier failures on the parent, and a changed signature named as such."""
from evo.core.shapes import Shape
from evo.evaluation.static_checks import check_source
from tests.fake_anthropic import FakeAnthropic, message
from tests.llm_helpers import PARENT, SHAPE, operators

OTHER = Shape(512, 2048, 1024)


def rendered(archive, run, shape, generation=None):
    with FakeAnthropic(lambda req, n: (200, message("no edit"), 0)) as server:
        ops, _ = operators(server, archive, run)
        req = ops["llm:deepen_pipeline"].request([PARENT], shape, {}, generation=generation)
    return req.text


def test_a_prompt_says_where_the_parent_was_measured_and_what_failed_on_it(llm_env):
    archive, run = llm_env
    archive.insert("kernels", {"id": PARENT.id, "source": PARENT.source, "run_id": run})
    archive.insert("evaluations", {"run_id": run, "kernel_id": PARENT.id, "M": OTHER.M, "N": OTHER.N, "K": OTHER.K,
                                   "status": "ok", "time_ms": 0.0123, "mode": "rotating", "speedup": 0.5})
    text = rendered(archive, run, SHAPE)
    assert f"not measured on this shape ({SHAPE}) yet; measured at {OTHER}: 12.30 us" in text
    assert "time at 512x2048x1024: 12.30 us" in rendered(archive, run, OTHER)
    assert "Earlier attempts" not in text

    archive.insert("llm_calls", {"run_id": run, "operator": "llm:retile", "parent_id": PARENT.id, "outcome": "no_edit",
                                 "error": "edit 1: the SEARCH text does not occur in the parent", "generation": 1})
    archive.insert("lineage", {"child": "c" * 64, "parent": PARENT.id, "run_id": run, "operator": "llm:registers"})
    archive.insert("evaluations", {"run_id": run, "kernel_id": "c" * 64, "M": 1024, "N": 1024, "K": 1024,
                                   "status": "compile_error", "error": "identifier 'x' is undefined",
                                   "operator": "llm:registers", "generation": 2})
    text = rendered(archive, run, SHAPE)
    failures = text[text.index("Earlier attempts on this parent that failed"):]
    assert failures.index("llm:registers: compile_error: identifier 'x' is undefined") \
        < failures.index("llm:retile: no_edit: edit 1: the SEARCH text does not occur")  # newest first
    assert text.startswith("Parent kernel:\n```cuda\n")  # the stable part first, for the cache
    # a prompt of generation 2 shows what failed before it: the same history, the same prompt
    earlier = rendered(archive, run, SHAPE, generation=2)
    assert "llm:retile: no_edit" in earlier and "compile_error" not in earlier


def test_a_changed_signature_is_named_a_signature_mismatch():
    """It was reported as 'entry point missing'."""
    changed = PARENT.source.replace('extern "C" __global__', "__global__", 1)
    (abi,) = [r for r in check_source(changed) if r.rule == "abi"]
    assert abi.reason.startswith("signature mismatch") and "extern" in abi.reason
    wrong_type = PARENT.source.replace("half* __restrict__ C", "float* __restrict__ C", 1)
    (abi,) = [r for r in check_source(wrong_type) if r.rule == "abi"]
    assert abi.reason.startswith("signature mismatch") and "float" in abi.reason
