"""The `evo` command line: a thin layer that turns arguments into library calls.

    evo run [overrides]        the search (a Hydra application: --help, --cfg job, -m for multirun)
    evo resume ARCHIVE         continue the last unfinished search run of an archive
    evo bench [overrides]      time the libraries (and given kernels) on a shape set
    evo sweep [overrides]      evaluate the families' configurations: shortlist, random or exhaustive
    evo selftest [overrides]   run deliberately bad kernels: each must be caught on this GPU
    evo archive ...            browse an archive (evo archive --help)
    evo export ARCHIVE         write the best kernel per shape, a manifest and the cubins
    evo report ARCHIVE         one HTML file with the plots of a run

Options before or after the command: -q/--quiet (warnings and results only), -v/--verbose
(debug messages), --version. Every run also writes a complete log beside its archive.
"""
from evo.cli.main import main

__all__ = ["main"]
