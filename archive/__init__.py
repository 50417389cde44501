"""The archive: one SQLite file per search (WAL mode, writes in transactions).

It holds everything needed to browse, export and resume a search: runs and their config,
kernels (source, hash, parents, operator, template parameters), compiles, evaluations,
baselines, MAP-Elites cells by shape and their history, LLM calls, policy, island and RNG state.
It talks to SQLite only: no GPU, no LLM.
"""
from archive.schema import SCHEMA_VERSION
from archive.store import Archive

__all__ = ["Archive", "SCHEMA_VERSION"]
