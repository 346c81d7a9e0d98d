"""The layout's own rules that import-linter cannot state: no import cycle anywhere in aitj, and
modules small enough to read in one sitting (import-linter checks the layers themselves)."""

from __future__ import annotations

import grimp

from tests.seeds import REPO

# About 400 lines is the aim; past 450 a module should be split (generated data excepted:
# there is none in aitj/ today).
MAX_MODULE_LINES = 450


def _cycles(graph: grimp.ImportGraph) -> list[set[str]]:
    """_cycles: the strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(group)

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_aitj_module_imports_itself_through_others() -> None:
    assert _cycles(grimp.build_graph("aitj")) == []


def test_no_module_is_too_long_to_read_in_one_sitting() -> None:
    long = {
        str(path.relative_to(REPO)): n
        for path in (REPO / "aitj").rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
