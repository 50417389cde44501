"""The version of evo (recorded with every run and export)."""
VERSION = "0.2.0"
