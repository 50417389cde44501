from evo.cli import entry

entry()
