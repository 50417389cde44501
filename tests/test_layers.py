"""The package's layering (docs/layers.md): imports point one way, and nothing imports in a circle.

Every module of the installed package is read with `ast` (imports inside functions count too) and
assigned to a unit; a unit may import itself and units of a strictly lower layer only.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: source folder -> the package it installs as (pyproject.toml's package-dir)
FOLDERS = {"evo": "evo", "archive": "evo.archive", "islands": "evo.islands", "mutators": "evo.mutators",
           "conf": "evo.conf"}
#: unit -> layer, lowest first
LAYERS = {
    "evo.core": 0,
    "evo.config": 1, "evo.archive": 1, "evo.families": 1, "evo.islands": 1, "evo.conf": 1,
    "evo.evaluation": 2, "evo.mutators": 2,
    "evo.search": 3,
    "evo.export": 4, "evo.report": 4, "evo.serve": 4, "evo.dispatch": 4, "evo.templates": 4,
    "evo.cli": 5, "evo.__main__": 6,
}


def modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def unit_of(module: str) -> str:
    if module == "evo":  # the root package only re-exports the version
        return "evo.core"
    units = [u for u in LAYERS if module == u or module.startswith(u + ".")]
    assert units, f"{module} belongs to no layer: add its unit to LAYERS here and to docs/layers.md"
    return max(units, key=len)


def imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The evo modules `module` imports (a name imported from a package counts as its submodule)."""
    out = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in out if m == "evo" or m.startswith("evo.") or m.split(".")[0] in FOLDERS}


GRAPH = {m: imports(m, p, set(modules())) for m, p in modules().items()}


def test_no_top_level_package_but_evo_is_imported():
    strays = {(m, i) for m, deps in GRAPH.items() for i in deps if i.split(".")[0] in set(FOLDERS) - {"evo"}}
    assert not strays, f"import these as evo.<folder>, not as top-level packages: {sorted(strays)}"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_point_down(module):
    mine = unit_of(module)
    for dep in sorted(GRAPH[module]):
        theirs = unit_of(dep)
        if theirs == mine:
            continue
        assert LAYERS[theirs] < LAYERS[mine], (
            f"{module} (layer {LAYERS[mine]}, {mine}) imports {dep} (layer {LAYERS[theirs]}, {theirs}): "
            f"a layer may only import lower layers (docs/layers.md)")


def test_no_import_cycles():
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, ()):
            if w not in GRAPH:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not cycles, f"modules that import each other (directly or in a ring): {cycles}"


SQL = re.compile(r"\b(select\s+.+\s+from|insert\s+(or\s+\w+\s+)?into|update\s+\w+\s+set|delete\s+from|"
                 r"create\s+table)\b", re.I)


def test_sql_is_written_only_inside_the_archive():
    offenders = []
    for module, path in modules().items():
        if unit_of(module) == "evo.archive":
            continue
        text = path.read_text()
        if SQL.search(text) or ".db." in text or "._insert(" in text:
            offenders.append(module)
    assert not offenders, f"SQL outside evo.archive (add a typed function there instead): {offenders}"


def test_structural_operator_and_family_names_match_the_config_choices():
    from evo.config import FAMILY_NAMES, STRUCTURAL_OPERATORS
    from evo.families import FAMILIES
    from evo.mutators.structural import OPERATORS
    assert set(OPERATORS) == set(STRUCTURAL_OPERATORS)
    assert set(FAMILIES) == set(FAMILY_NAMES)


def test_product_code_has_no_test_hooks():
    hooks = [m for m, p in modules().items() if re.search(r"crash_after|simulated crash|if\s+_?testing", p.read_text())]
    assert not hooks, f"test hooks belong in tests/, not in {hooks}"
