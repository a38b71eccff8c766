"""The import structure of h2lab: no import cycles between its modules, no import against the
declared layer order, and a pure core that imports nothing able to start a process or open a
socket (docs/architecture.md, principle 1: "pure core, thin edges").

Both tests read the source, not the installed package's state: the cycle test parses every file
with :mod:`ast`; the purity test imports in a fresh interpreter, so that modules this test
process already holds cannot hide what importing a module pulls in.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

ALLOWED_EDGES: frozenset[tuple[str, str]] = frozenset()
"""Import edges (importer, imported) left out of the cycle check, each a known cycle outside
net/ and pages/ (which must have none) that its owner has not broken yet. An edge that no
longer exists, or no longer closes a cycle, must be removed from here."""

LAYERS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    (
        "definitions",
        (
            (
                "h2lab",
                "h2lab.errors",
                "h2lab.units",
                "h2lab.paths",
                "h2lab.logtail",
                "h2lab.procs",
                "h2lab.tls",
                "h2lab.machine",
                "h2lab.version",
                "h2lab.programs",
                "h2lab.maven",
                "h2lab.debian13",
                "h2lab.spec",
                "h2lab.results",
                "h2lab.artifacts",
                "h2lab.har",
                "h2lab.metrics",
            ),
        ),
    ),
    ("network", (("h2lab.net",),)),
    ("pages", (("h2lab.pages",),)),
    ("adapters", (("h2lab.servers",), ("h2lab.clients",), ("h2lab.store",))),
    ("runner", (("h2lab.runner", "h2lab.cluster", "h2lab.record", "h2lab.doctor"),)),
    ("analysis", (("h2lab.analysis",),)),
    ("report", (("h2lab.report",),)),
    ("studies", (("h2lab.reprio",),)),
    ("command line", (("h2lab.cli", "h2lab.__main__", "h2lab.reference", "h2lab.module_index"),)),
)
"""The layer order, lowest first (docs/architecture.md): a module may import modules of its own
room, of the layers before its own, and nothing else: not a later layer, and not another room
of its own layer (servers and clients stand side by side; what both need lives below them).
Every module belongs where the longest prefix listed puts it (``h2lab.spec.factors`` with
``h2lab.spec``; ``h2lab`` itself is the package's ``__init__``, which holds the version). A new
top-level module or package must be placed here, or the test fails."""


def place_of(module: str) -> tuple[int, int] | None:
    """(layer, room) of ``module`` in LAYERS; None when no entry covers it."""
    best: tuple[int, int, int] | None = None  # (prefix length, layer, room)
    for layer, (_, rooms) in enumerate(LAYERS):
        for room, prefixes in enumerate(rooms):
            for prefix in prefixes:
                covers = module == prefix or (prefix != "h2lab" and module.startswith(prefix + "."))
                if covers and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), layer, room)
    return None if best is None else best[1:]


def against_layers(graph: Mapping[str, set[str]]) -> list[str]:
    """Every import of a later layer or of another room of the importer's own layer, and every
    module in no layer."""
    problems = [f"{m} belongs to no layer: add it to LAYERS" for m in graph if place_of(m) is None]
    for importer, imported in sorted((a, b) for a, bs in graph.items() for b in bs):
        here, there = place_of(importer), place_of(imported)
        if here is None or there is None or there[0] < here[0] or there == here:
            continue
        where = "a later layer" if there[0] > here[0] else "beside it in its own layer"
        problems.append(
            f"{importer} ({LAYERS[here[0]][0]}) imports {imported} ({LAYERS[there[0]][0]}), {where}"
        )
    return problems


def test_no_import_against_the_layer_order() -> None:
    graph = import_graph()
    problems = against_layers(graph)
    assert not problems, "imports against the layer order:\n" + "\n".join(problems)


def test_the_layer_check_sees_a_wrong_way_import() -> None:
    """The check itself: an import of a later layer, of a room beside, and a module in no
    layer, are each found; imports down the layers are not."""
    graph = {
        "h2lab.spec.factors": {"h2lab.servers"},
        "h2lab.clients.h2load": {"h2lab.servers", "h2lab.pages", "h2lab.clients"},
        "h2lab.x": set(),
    }
    assert against_layers(graph) == [
        "h2lab.x belongs to no layer: add it to LAYERS",
        "h2lab.clients.h2load (adapters) imports h2lab.servers (adapters), beside it in its own"
        " layer",
        "h2lab.spec.factors (definitions) imports h2lab.servers (adapters), a later layer",
    ]
    assert against_layers({"h2lab.cli.run": {"h2lab.runner.run", "h2lab.spec"}}) == []


PURE_PACKAGES = ("h2lab.spec", "h2lab.analysis", "h2lab.metrics", "h2lab.report")
PURE_MODULES = (
    "h2lab.runner.matrix",
    "h2lab.results",
    "h2lab.har",
    "h2lab.spec.tcp",
    "h2lab.spec.protocols",
    "h2lab.units",
    "h2lab.errors",
)
"""Every module of PURE_PACKAGES, and these, must import in an interpreter where nothing can
start a process or open a socket."""


def modules() -> dict[str, Path]:
    """Every module of h2lab by dotted name (a package by its ``__init__.py``)."""
    found = {}
    for path in sorted((SRC / "h2lab").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports_of(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The h2lab modules ``name`` imports, wherever the import statement is: at module level,
    inside a function, or under ``if TYPE_CHECKING:`` (a type-only import is a dependency all
    the same). ``from h2lab.x import y`` is an import of ``h2lab.x.y`` when that is a module,
    else of ``h2lab.x``. Importing a submodule also runs its package's ``__init__``, but that
    is not counted: a package that imports its own submodules would otherwise always be a
    cycle."""
    known = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package, up level - 1 packages
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in known else module)
        elif (  # importlib.import_module("h2lab...") with a literal name
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return {m for m in found if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, found) for name, path in found.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(graph: Mapping[str, set[str]], components: list[list[str]]) -> str:
    lines = []
    for component in components:
        lines.append("cycle among " + ", ".join(component) + ":")
        lines += [
            f"  {a} imports {b}" for a in component for b in sorted(graph[a] & set(component))
        ]
    return "\n".join(lines)


def test_no_import_cycles() -> None:
    graph = import_graph()
    # the parse sees imports inside functions, and `from package import submodule`
    assert "h2lab.pages.resolve" in graph["h2lab.pages"]
    assert "h2lab.pages.gen_images" in graph["h2lab.pages.synthetic"]

    everything = cycles(graph)
    in_core = [c for c in everything if any(m.startswith(("h2lab.net", "h2lab.pages")) for m in c)]
    assert not in_core, "net/ and pages/ must have no cycle:\n" + _describe(graph, in_core)

    in_cycles = {(a, b) for c in everything for a in c for b in graph[a] & set(c)}
    stale = sorted(ALLOWED_EDGES - in_cycles)
    assert not stale, f"allowed edges that no longer close a cycle, remove them: {stale}"

    kept = {a: {b for b in bs if (a, b) not in ALLOWED_EDGES} for a, bs in graph.items()}
    left = cycles(kept)
    assert not left, "import cycles (break them, or allow one edge with a reason):\n" + _describe(
        kept, left
    )


# Runs in a fresh interpreter: argv[1] = JSON list of modules, argv[2] = file for the result.
_PURITY_CHILD = r"""
import importlib, json, os, sys

BLOCKED = ("subprocess", "_posixsubprocess", "socket", "_socket", "multiprocessing", "asyncio",
           "concurrent.futures.process")
OS_CALLS = ("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv",
            "execve")
attempts = []


def blocked(name):
    return any(name == b or name.startswith(b + ".") for b in BLOCKED)


def chain(what):
    # the modules whose top-level code is running, outermost first: who asked for `what`
    names, frame = [], sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
            names.append(frame.f_globals.get("__name__", "?"))
        frame = frame.f_back
    attempts.append(" -> ".join([*reversed(names), what]))


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if blocked(name):
            chain(name)
            raise ImportError(f"{name} is blocked: it can start processes or open sockets")
        return None


def refuse(call):
    def refused(*args, **kwargs):
        chain(f"os.{call}()")
        raise OSError(f"os.{call} is blocked")
    return refused


for name in [n for n in sys.modules if blocked(n)]:
    del sys.modules[name]
sys.meta_path.insert(0, Blocker())
for call in OS_CALLS:
    if hasattr(os, call):
        setattr(os, call, refuse(call))

failed = {}
for module in json.loads(sys.argv[1]):
    try:
        importlib.import_module(module)
    except BaseException as exc:
        failed[module] = f"{type(exc).__name__}: {exc}"
with open(sys.argv[2], "w") as out:
    json.dump({"failed": failed, "blocked": sorted(set(attempts))}, out)
"""


def test_the_pure_core_imports_without_processes_sockets_or_writes(tmp_path: Path) -> None:
    """Importing a pure module may not import subprocess, socket, multiprocessing or asyncio,
    call os's process functions, or write into h2lab's cache or state folders (a module that
    imports subprocess inside a function only is pure: judged is what importing pulls in)."""
    pure = [
        m
        for m in modules()
        if m in PURE_MODULES or any(m == p or m.startswith(p + ".") for p in PURE_PACKAGES)
    ]
    assert set(PURE_MODULES) <= set(pure) and "h2lab.report.build" in pure, pure
    result = tmp_path / "result.json"
    env = {
        "PATH": "/usr/bin:/bin",
        "H2LAB_CACHE": str(tmp_path / "cache"),
        "H2LAB_STATE": str(tmp_path / "state"),
        "HOME": str(tmp_path / "home"),
    }
    proc = subprocess.run(
        [sys.executable, "-I", "-c", _PURITY_CHILD, json.dumps(pure), str(result)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(result.read_text())
    problems = [f"{m} does not import: {why}" for m, why in sorted(report["failed"].items())]
    problems += [f"blocked at import time: {chain}" for chain in report["blocked"]]
    assert not problems, "\n".join(problems)
    written = [p for p in (tmp_path / "cache", tmp_path / "state", tmp_path / "home") if p.exists()]
    assert not written, f"importing wrote into {written}"
