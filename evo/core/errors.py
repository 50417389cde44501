"""Named errors. Each message says what went wrong and what to do about it."""


class EvoError(Exception):
    """Base class: the CLI prints these as one line, without a traceback."""


class ConfigError(EvoError):
    """A configuration value is missing or out of range."""


class ShapeError(EvoError):
    """A shape or shape-set specification cannot be understood."""


class DeclarationError(EvoError):
    """A kernel's in-source launch declaration is malformed."""

    def __init__(self, message: str, line: int | None = None):
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)


class ArchiveError(EvoError):
    """The archive file cannot be opened or is of an unknown schema."""


class CompileToolError(EvoError):
    """nvcc itself is missing or unusable (not a compile error of a candidate)."""


class GpuUnavailable(EvoError):
    """The GPU evaluator was asked for on a machine where it cannot run."""
