"""The archive: one SQLite file per search (WAL mode, writes in transactions).

It holds everything needed to browse, export and resume a search: runs and their config,
kernels (source, hash, parents, operator, template parameters), compiles, evaluations,
baselines, MAP-Elites cells by shape and their history, LLM calls, policy, island and RNG state.
It talks to SQLite only (no GPU, no LLM) and imports nothing above `evo.core`; all SQL of evo is
written here. The typed API, by topic:

- `store.Archive`: open (create, migrate, refuse foreign or newer files), transactions, runs, state;
- `records`: kernels, compiles, evaluations, library baselines, device peaks;
- `elites`: MAP-Elites cells keyed by shape, and their history;
- `search_state`: save a generation, load a run for resume;
- `llm_calls`: LLM calls and spending, recorded answers for replay;
- `queries`: read-only queries for browsing, reports, export and the LLM prompts;
- `ownership`: who is running a run (one process at a time; stale claims taken over);
- `connection`, `integrity`, `paths`: SQLite errors as one-line ArchiveErrors, the integrity check
  on open, odd paths refused before SQLite sees them;
- `datasette`: table descriptions and canned queries for `evo archive serve`.
"""
from evo.archive.schema import SCHEMA_VERSION
from evo.archive.store import Archive

__all__ = ["Archive", "SCHEMA_VERSION"]
