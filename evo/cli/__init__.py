"""The `evo` command line, a thin layer over the library: `evo --help` lists the commands
(`evo.cli.main.USAGE`); the Hydra commands live in `hydra_app`, browsing in `browse`, the
argparse commands in `commands`, terminal output in `terminal`."""
from evo.cli.main import entry, main

__all__ = ["entry", "main"]
