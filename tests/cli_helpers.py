"""Running the command line inside the test process."""
import logging
import signal

from evo.cli import main


def evo_cli(capsys, *args) -> tuple[int, str, str]:
    """`evo ARGS` in this process: (exit code, stdout, stderr). The `evo` logger and SIGPIPE, which
    the command line sets up for a process of its own, are put back afterwards."""
    evo_log = logging.getLogger("evo")
    saved = evo_log.handlers[:], evo_log.level, evo_log.propagate
    sigpipe = signal.getsignal(signal.SIGPIPE) if hasattr(signal, "SIGPIPE") else None
    code = 0
    try:
        main(list(args))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        evo_log.handlers[:], evo_log.propagate = saved[0], saved[2]
        evo_log.setLevel(saved[1])
        if sigpipe is not None:
            signal.signal(signal.SIGPIPE, sigpipe)
    out, err = capsys.readouterr()
    return code, out, err
