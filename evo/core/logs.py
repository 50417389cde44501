"""Conventions of evo's log records (the `evo` logger tree; handlers are set by the command line
and by each recorded session, which writes a log file beside its archive)."""

#: `log.info(text, extra=RESULT)` marks a record as a command's result: shown on the terminal even
#: with -q, like warnings and errors
RESULT = {"result": True}
