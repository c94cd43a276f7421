"""The architecture rules of issue 14: no import cycles, the engine does not resolve names, every
module imports on its own, small files, one plugin table."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "dlsched"
MAX_LINES = 500
LONG_FILE_MARK = "500 lines"
"""A file over `MAX_LINES` must say why in its module docstring, with these words in it."""
REGISTRIES = ("dlsched.plugins", "dlsched.schedulers.registry", "dlsched.workloads.registry")


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    module_name(p): p
    for p in sorted(PACKAGE.rglob("*.py"))
    if p.name != "__main__.py"  # `python -m dlsched`: importing it runs the CLI
}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, module: str) -> set[str]:
    """The dlsched modules an import statement names (``from pkg import submodule`` counts as
    importing the submodule)."""
    found: set[str] = set()
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if MODULES[module].name != "__init__.py":
                package = package[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        names = [f"{base}.{alias.name}" for alias in node.names]
        names = [n if n in MODULES else base for n in names]
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name.startswith("dlsched"):
            found.add(name)
    return found


def imports(module: str, *, top_level_only: bool) -> set[str]:
    """dlsched modules imported by ``module``: at module level (``if TYPE_CHECKING:`` blocks
    included, since a cycle there is still a cycle for the reader) or anywhere."""
    tree = ast.parse(MODULES[module].read_text())
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.update(_targets(node, module))
            elif isinstance(node, ast.If) and (_is_type_checking(node) or top_level_only):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)

    if top_level_only:
        visit(tree.body)
    else:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.update(_targets(node, module))
    found.discard(module)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_module_level_import_graph_has_no_cycle() -> None:
    graph = {module: imports(module, top_level_only=True) for module in MODULES}
    assert cycles(graph) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_engine_does_not_import_plugin_registries() -> None:
    """No module of ``dlsched.sim`` or ``dlsched.core`` reaches a registry or the plugin table,
    through any chain of imports (function-local ones included)."""
    graph = {module: imports(module, top_level_only=False) for module in MODULES}
    engine = [m for m in MODULES if m.startswith(("dlsched.sim", "dlsched.core"))]
    reached: dict[str, str] = {}
    todo = [(m, m) for m in engine]
    while todo:
        module, origin = todo.pop()
        for nxt in graph[module]:
            if nxt not in reached and nxt != "dlsched":
                reached[nxt] = origin
                todo.append((nxt, origin))
    bad = {name: reached[name] for name in REGISTRIES if name in reached}
    assert bad == {}


def test_every_module_imports_in_a_fresh_interpreter() -> None:
    """One interpreter per group of modules would be slow; one fresh interpreter importing them
    all, each in sorted order, still fails on any module that cannot be imported."""
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    result = subprocess.run(
        [sys.executable, "-c", code, *sorted(MODULES)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_no_source_file_is_over_500_lines_unless_it_says_why() -> None:
    too_long = []
    for module, path in MODULES.items():
        text = path.read_text()
        if text.count("\n") > MAX_LINES and LONG_FILE_MARK not in (
            ast.get_docstring(ast.parse(text)) or ""
        ):
            too_long.append(module)
    assert too_long == []


def test_the_plugin_table_names_every_paper_package() -> None:
    from dlsched.plugins import PLUGINS, plugins

    papers = {p.name for p in (PACKAGE / "papers").iterdir() if (p / "__init__.py").exists()}
    assert {f"dlsched.papers.{name}:PLUGIN" for name in papers} <= set(PLUGINS)
    assert len(plugins()) == len(PLUGINS)


def test_reading_the_plugin_table_imports_no_plugin_code() -> None:
    probe = (
        "import sys\nfrom dlsched.plugins import plugins\nplugins()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('dlsched.papers', 'torch'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    loaded = set(ast.literal_eval(result.stdout.strip()))
    assert loaded == {"dlsched.papers"} | {
        f"dlsched.papers.{name}" for name in ("dl2", "deeprm", "sched2")
    }
