"""The package's shape (DESIGN.md sections 4-6): no import cycles, a core that does not reach into
the subpackages, a config that does not pull in numba, sorted public surfaces, bounded modules."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kbest_bleu"
CORE = {"config", "errors", "_collector", "_arrow", "_compute", "_kernel_codes", "_numpy_counting", "tokenize", "encode", "_counting", "_aot", "_cpus", "_numba_cache", "stats", "smoothing", "bleu"}
# the counting kernels call each other and must share one file (DESIGN.md section 5): exempt from the size bound
ONE_FILE_BY_NECESSITY = {"_counting.py"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(path: Path) -> set:
    """kbest_bleu modules imported at module level (imports inside functions are lazy by design)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("kbest_bleu"):
                out.add(target)
                out.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("kbest_bleu"))
    return out


def _graph() -> dict:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: {t for t in _top_level_imports(p) if t in modules and t != m} for m, p in modules.items()}


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


def test_core_does_not_import_subpackages():
    graph = _graph()
    for m in (f"kbest_bleu.{c}" for c in CORE):
        bad = [t for t in graph[m] if t.count(".") >= 1 and t.split(".")[1] not in CORE]
        assert not bad, f"{m} imports {bad}; the core must not depend on the subpackages"


def test_config_and_package_import_without_numba():
    """Options can be built (and the CLI can parse them) without loading numba or pyarrow."""
    code = "import sys, kbest_bleu, kbest_bleu.config; print(sorted(m for m in ('numba', 'pyarrow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_scoring_modules_import_without_numba():
    """The numpy engine's jobs never load numba: the scoring modules reach the kernels only
    through kbest_bleu._kernel_codes.kernels()."""
    code = ("import sys, kbest_bleu.bleu, kbest_bleu.stats, kbest_bleu.batch.parquet, kbest_bleu.batch.stream; "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _public_modules():
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(PACKAGE)
        if any(part.startswith("_") and part != "__init__.py" for part in rel.parts):
            continue  # private modules (_counting, _kernels, ...)
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
    if path.name in ONE_FILE_BY_NECESSITY:
        return
    assert len(path.read_text().splitlines()) <= 600, f"{path.name}: split it (DESIGN.md section 4)"
