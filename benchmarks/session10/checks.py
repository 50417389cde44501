"""GPU 0 of the tenth session's first command (run_a.sh): the ninth session's prepared STREAM_K=2 check,
then the ordered fix-up check on llm_layers (8 picks, 2 pairs a shape), one evaluator each, one log."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "session9")]
import fixup_check  # noqa: E402
import streamk2_check  # noqa: E402

if __name__ == "__main__":
    print("== STREAM_K=2 (benchmarks/session9/streamk2_check.py)", flush=True)
    streamk2_check.main()
    print("== FIXUP=1 against fp32 atomics (benchmarks/session10/fixup_check.py llm_layers 8 2)", flush=True)
    sys.argv = [sys.argv[0], "llm_layers", "8", "2"]
    fixup_check.main()
