"""Conventions of evo's log records (the `evo` logger tree; handlers are set by the command line
and by each recorded session, which writes a log file beside its archive)."""

#: `log.info(text, extra=RESULT)` marks a record as a command's result: shown on the terminal even
#: with -q, like warnings and errors
RESULT = {"result": True}


def simulated_note(backend: str) -> str:
    """The words that open a result of the CPU test double, so that a table saved from stdout cannot
    pass for a measurement ("" for a real GPU)."""
    return "SIMULATED (CPU test double: modelled times, not measurements): " if backend == "simulated" else ""
