"""The import graph of src/wavescat: no cycles, and imports at the top of
modules except the heavy optional ones deferred on purpose (CuPy; gmsh and meshio, which
the GPU device lacks; mpi4py, only a solve on several ranks needs it). The graph is read
from the sources with `ast`: an import inside a function counts as an edge too, so a cycle
cannot hide behind one."""
import ast
import importlib
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "wavescat"
DEFERRED = {"cupy", "cupyx", "gmsh", "meshio", "mpi4py"}


def modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imported(name: str, path: Path, node, known) -> list[str]:
    """The wavescat modules an import statement of module `name` loads (a package's
    submodule when it names one, else the package)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in known]
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if node.level:
        base = base[:len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module
    subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
    return subs if len(subs) == len(node.names) else [target, *subs] if target in known else subs


def type_only(tree) -> set[int]:
    """The ids of the import statements under `if TYPE_CHECKING:` (they load nothing)."""
    return {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
            and "TYPE_CHECKING" in ast.unparse(block.test)
            for stmt in block.body for node in ast.walk(stmt)}


def import_graph(runtime: bool = False):
    """({module: {imported modules}}, [(module, line, imported name) of imports in functions]);
    `runtime`: leave out the type-only imports."""
    known = modules()
    edges, deferred = {}, []
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        edges[name] = set()
        skip = type_only(tree) if runtime else set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
                edges[name].update(m for m in imported(name, path, node, known) if m != name)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        what = (node.names[0].name if isinstance(node, ast.Import)
                                else "." * node.level + (node.module or ""))
                        deferred.append((name, node.lineno, what))
    return edges, deferred


def cycles(edges) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    edges, _ = import_graph()
    assert len(edges) > 100  # the package was read
    assert cycles(edges) == []


def test_no_cycles_between_packages():
    """The top level of wavescat in layers: a module's or subpackage's imports (a subpackage's
    module stands for the subpackage) never lead back to it. From the bottom: errors, backend,
    progress, memory, files, defaults, surface; problem; geometry, reference; bem; solve;
    timedomain; results; configuration; planning; commands; cli. A type-only import (under
    TYPE_CHECKING: results/study_table.py names the Case it takes) loads nothing and is left out."""
    edges, _ = import_graph(runtime=True)
    top = {}
    for module, targets in edges.items():
        here = ".".join(module.split(".")[:2])
        top.setdefault(here, set()).update(
            there for there in (".".join(t.split(".")[:2]) for t in targets)
            if there not in (here, "wavescat"))
    assert {"wavescat.configuration", "wavescat.planning", "wavescat.problem",
            "wavescat.results"} <= set(top)
    assert cycles(top) == []


def test_every_module_imports():
    """Each module loads (the graph above drops an import it cannot resolve, such as a relative
    import with a dot too few)."""
    for name in sorted(modules()):
        if not name.endswith("__main__"):
            importlib.import_module(name)


def test_imports_at_module_top():
    _, deferred = import_graph()
    assert [d for d in deferred if d[2].split(".")[0] not in DEFERRED] == []


BEM_LAYERS = ["discretisation", "kernels", "assembly", "formulations"]


def test_bem_layers():
    """bem/ in layers (bem/__init__.py): a layer imports only the layers before it, and linalg
    none of them."""
    edges, _ = import_graph()

    def layer(module):
        parts = module.split(".")
        return parts[2] if parts[:2] == ["wavescat", "bem"] and len(parts) > 2 else None

    wrong = []
    for module, targets in edges.items():
        here = layer(module)
        for target in targets:
            there = layer(target)
            if here is None or there is None or there == here or there == "linalg":
                continue
            if here == "linalg" or BEM_LAYERS.index(there) > BEM_LAYERS.index(here):
                wrong.append((module, target))
    assert wrong == []
