"""The package's shape (DESIGN.md section 4): the data flow's layers, no import cycles (imports
inside functions included), no area reaching into another area's private names, a config that does
not pull in numba, sorted public surfaces, bounded modules."""

import ast
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kbest_bleu"
MAX_LINES = 500

# The layers, in data-flow order: a module may import its own layer and the layers before it.
# core: options, tokenize, encode, count, score; then the areas built on it; then the program.
LAYERS = [
    ("foundation", {"errors", "settings", "config", "jit", "collector", "arrays", "arrow_compute", "memory"}),
    ("core", {"tokenize", "encode", "counting", "stats", "smoothing", "bleu", "token_ids", "rewards"}),
    ("files", {"files"}),
    ("metrics", {"metrics"}),
    ("batch", {"batch"}),
    ("tuning", {"tuning"}),
    ("research", {"research"}),
    ("program", {"cli", "program", "__main__", "warmup", "plots"}),
]


def _module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path = PACKAGE) -> set:
    """(module, name) pairs of the kbest_bleu imports anywhere in the module (functions too)."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("kbest_bleu"):
                out.update((target, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            out.update((a.name, None) for a in node.names if a.name.startswith("kbest_bleu"))
    return out


@lru_cache(maxsize=None)
def _modules() -> dict:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


@lru_cache(maxsize=None)  # parsed once per session: per parametrized test it took 0.55 s, 40 s in all
def _graph() -> dict:
    """module -> the package's modules it imports (a name imported from a package counts as its
    submodule when there is one)."""
    modules = _modules()
    graph = {}
    for m, p in modules.items():
        targets = set()
        for target, name in _imports(p):
            if name and f"{target}.{name}" in modules:
                targets.add(f"{target}.{name}")
            elif target in modules:
                targets.add(target)
        graph[m] = targets - {m}
    return graph


def _layer(module: str) -> int:
    parts = module.split(".")[1:]
    if not parts:
        return 0
    if parts[-1] == "cli":  # a subpackage's commands belong to the program
        return len(LAYERS) - 1
    for i, (_, names) in enumerate(LAYERS):
        if parts[0] in names:
            return i
    raise AssertionError(f"{module}: in no layer of tests/test_architecture.py; place it")


def test_import_graph_has_no_cycles():
    graph = _graph()
    state: dict = {}

    def visit(m, path):
        state[m] = "open"
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                cycle = path[path.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_the_graph_sees_imports_inside_functions(tmp_path):
    root = tmp_path / "kbest_bleu"
    root.mkdir()
    (root / "m.py").write_text("def f():\n    from .other import g\n    from . import settings\n")
    assert _imports(root / "m.py", root) == {("kbest_bleu.other", "g"), ("kbest_bleu", "settings")}


@pytest.mark.parametrize("module", sorted(_modules()))
def test_imports_follow_the_data_flow(module):
    """No backward edge: a module imports only its own layer and the layers before it."""
    graph = _graph()
    mine = _layer(module)
    bad = [t for t in sorted(graph[module]) if _layer(t) > mine]
    assert not bad, (f"{module} (layer {LAYERS[mine][0]}) imports {bad} from a later layer "
                     f"({', '.join(LAYERS[_layer(t)][0] for t in bad)})")


def _area(module: str) -> str:
    """A metric's subpackage, else the package's first level (``kbest_bleu.counting``, ``kbest_bleu.stats``)."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 2 and parts[1] == "metrics" else ".".join(parts[:2])


@pytest.mark.parametrize("module", sorted(_modules()))
def test_no_module_reaches_into_another_areas_private_names(module):
    path = _modules()[module]
    modules = _modules()
    bad = []
    for target, name in _imports(path):
        target_module = f"{target}.{name}" if name and f"{target}.{name}" in modules else target
        if _area(target_module) == _area(module) or not target_module.startswith("kbest_bleu"):
            continue
        private_module = any(p.startswith("_") and not p.startswith("__") for p in target_module.split(".")[1:])
        private_name = (name is not None and name.startswith("_") and not name.startswith("__")
                        and target_module == target)
        if private_module or private_name:
            bad.append(f"{target}:{name}")
    assert not bad, f"{module} imports private names of another area: {bad}"


def test_config_and_package_import_without_numba():
    """Options can be built (and the CLI can parse them) without loading numba or pyarrow."""
    code = "import sys, kbest_bleu, kbest_bleu.config; print(sorted(m for m in ('numba', 'pyarrow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_scoring_and_tuning_modules_import_without_numba():
    """The numpy engine's jobs never load numba: the scoring modules reach the kernels only
    through kbest_bleu.counting.kernels(); tuning loads its kernels with their first use."""
    code = ("import sys, kbest_bleu.bleu, kbest_bleu.stats, kbest_bleu.batch.parquet, kbest_bleu.batch.stream, "
            "kbest_bleu.tuning; print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_kernel_is_declared_through_the_one_compile_path():
    """numba's njit is called only by kbest_bleu.jit: every kernel gets the package's cache, its
    announcements and a place in the warm-up's registry."""
    bad = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "jit.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("numba"):
                if any(a.name in ("njit", "jit", "generated_jit", "vectorize") for a in node.names):
                    bad.append(str(path.relative_to(PACKAGE)))
            if isinstance(node, ast.Attribute) and node.attr in ("njit", "jit") and \
                    isinstance(node.value, ast.Name) and node.value.id == "numba":
                bad.append(str(path.relative_to(PACKAGE)))
    assert not bad, f"numba's njit used directly (use kbest_bleu.jit.njit): {sorted(set(bad))}"


def _public_modules():
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(PACKAGE)
        if any(part.startswith("_") and part != "__init__.py" for part in rel.parts):
            continue  # private modules (_kernels, ...)
        if p.name in ("__main__.py", "cli.py") or "data" in rel.parts:
            continue
        yield p


@pytest.mark.parametrize("path", list(_public_modules()), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_public_modules_declare_a_sorted_all(path):
    tree = ast.parse(path.read_text())
    names = [n for n in tree.body if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)]
    assert names, f"{path.name}: no __all__"
    values = [e.value for e in names[0].value.elts]
    # isort-style, as ruff's RUF022: CONSTANTS, then Classes, then functions
    assert values == sorted(values, key=lambda v: (0 if v.isupper() else 1 if v[0].isupper() else 2, v)), \
        f"{path.name}: __all__ is not sorted"
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    defined |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    defined |= {a.asname or a.name for n in tree.body if isinstance(n, (ast.ImportFrom, ast.Import)) for a in n.names}
    if "__getattr__" in defined:  # lazy attributes (PEP 562)
        return
    missing = [v for v in values if v not in defined]
    assert not missing, f"{path.name}: __all__ names {missing} that the module does not define"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES, f"{path.name}: split it (DESIGN.md section 4)"
