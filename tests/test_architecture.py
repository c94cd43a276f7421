"""The architecture rules of issues 14 and 28: one declared layer order and no import cycle (over
every import, those inside functions included), the engine does not resolve names, every module
imports on its own, small files, one plugin table that every registering module is reached from,
and papers that only the plugin table names."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "dlsched"
MAX_LINES = 500
LONG_FILE_MARK = "500 lines"
"""A file over `MAX_LINES` must say why in its module docstring, with these words in it."""
REGISTRIES = ("dlsched.plugins", "dlsched.schedulers.registry", "dlsched.workloads.registry")

LAYERS: tuple[tuple[str, ...], ...] = (
    # leaves: parsing helpers, the import hook, the CSV writer, option fields' markers, the
    # plugin table (only strings), numba's kernel-cache guard
    (
        "dlsched.when_imported",
        "dlsched.kernel_cache",
        "dlsched.cli_args",
        "dlsched.cli_errors",
        "dlsched.cli_lazy",
        "dlsched.csv_rows",
        "dlsched.option_fields",
        "dlsched.plugins",
    ),
    ("dlsched.core",),  # jobs, cluster, views, decisions
    ("dlsched.models", "dlsched.placement", "dlsched.schedulers.base"),  # what the engine calls
    ("dlsched.sim",),  # the engine
    ("dlsched.schedulers", "dlsched.workloads"),  # policies and generators, by name
    ("dlsched.rl",),  # what every learned policy shares
    ("dlsched.runner",),  # one run by name
    ("dlsched.experiments", "dlsched.live", "dlsched.k8s", "dlsched.report"),  # many runs;
    # the real runtimes; HTML reports of runs
    ("dlsched.commands",),  # CLI pieces shared by the papers' commands
    ("dlsched.papers",),  # plugins: reached from below only through the plugin table
    ("dlsched.api",),  # the public front door
    ("dlsched.cli", "dlsched"),  # entry points
)
"""The layer order, lowest first: a module imports only modules of its own layer or below (the
longest prefix decides a module's layer). A new top-level module or package gets a line here."""


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


def all_imports() -> dict[str, set[str]]:
    """Every dlsched import of every module, those inside functions included."""
    return {module: imports(module, top_level_only=False) for module in MODULES}


def layer_of(module: str) -> int | None:
    """The index in `LAYERS` of the longest prefix naming ``module`` (None: no layer; the
    prefix ``dlsched`` names the package's ``__init__`` only)."""
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            inside = prefix != "dlsched" and module.startswith(prefix + ".")
            if (module == prefix or inside) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def test_the_import_graph_has_no_cycle() -> None:
    """Imports inside functions count: a cycle through a function-local import is still a
    cycle (``api`` ↔ ``experiments.compare`` was one)."""
    assert cycles(all_imports()) == []


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in all_imports().items()
        for target in sorted(targets)
        if (layer_of(target) or 0) > (layer_of(module) or 0)
    ]
    assert upward == []


def test_only_the_cli_and_the_package_import_the_front_door() -> None:
    importers = sorted(m for m, targets in all_imports().items() if "dlsched.api" in targets)
    assert set(importers) <= {"dlsched", "dlsched.cli"}


def test_no_paper_imports_another_paper() -> None:
    crossing = []
    for module, targets in all_imports().items():
        if module.startswith("dlsched.papers."):
            own = module.split(".")[2]
            crossing += [
                f"{module} -> {t}"
                for t in targets
                if t.startswith("dlsched.papers.") and t.split(".")[2] != own
            ]
    assert crossing == []


def test_the_layer_check_sees_an_upward_import() -> None:
    sim, registry = layer_of("dlsched.sim.simulator"), layer_of("dlsched.schedulers.registry")
    assert sim is not None and registry is not None and sim < registry
    assert layer_of("dlsched.not_declared") is None


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


@pytest.mark.slow
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


def registering_modules() -> set[str]:
    """Modules that import `dlsched.schedulers.registry.register` (to register a scheduler)."""
    found = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "dlsched.schedulers.registry"
                and any(alias.name == "register" for alias in node.names)
            ):
                found.add(module)
    return found


def unreached(scheduler_modules: set[str]) -> set[str]:
    """Registering modules that importing ``scheduler_modules`` (the plugin table's) does not
    import, through module-level imports."""
    graph = {module: imports(module, top_level_only=True) for module in MODULES}
    reached: set[str] = set()
    todo = list(scheduler_modules)
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(graph.get(module, ()))
    return registering_modules() - reached


def table_scheduler_modules() -> set[str]:
    from dlsched.plugins import plugins

    return {module for plugin in plugins() for module in plugin.scheduler_modules}


def test_every_registering_module_is_reached_from_the_plugin_table() -> None:
    """A scheduler module left out of `dlsched.plugins.BUILTIN` (or a paper's manifest) would
    make its names silently unknown."""
    assert unreached(table_scheduler_modules()) == set()


def test_a_line_missing_from_the_plugin_table_is_caught() -> None:
    """``random_policy`` is imported by no other module: without its line it is unreached
    (``fifo`` would still be reached, through the modules that import it, and registered)."""
    random_policy = "dlsched.schedulers.random_policy"
    assert unreached(table_scheduler_modules() - {random_policy}) == {random_policy}


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
    from dlsched.plugins import PLUGINS

    manifests = {target.partition(":")[0] for target in PLUGINS}
    assert loaded == {"dlsched.papers"} | {m for m in manifests if m.startswith("dlsched.papers")}


def code_strings(path: Path) -> list[str]:
    """The string constants of a module's code (docstrings left out: they may name examples)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_only_the_plugin_table_and_the_papers_name_a_paper() -> None:
    """Below the papers' layer, no code names a paper's package (imports: the layer test; here
    strings, such as ``"dlsched.papers.dl2.online"`` given to importlib): rl, live, experiments
    and the registries find the papers' environments, card checks and online learners through
    the manifests."""
    papers_layer = layer_of("dlsched.papers")
    assert papers_layer is not None
    naming = [
        f"{module}: {text!r}"
        for module, path in MODULES.items()
        if module != "dlsched.plugins" and (layer_of(module) or 0) < papers_layer
        for text in code_strings(path)
        if text.startswith("dlsched.papers.")
    ]
    assert naming == []


def test_no_virtual_environment_is_tracked() -> None:
    """A worktree's ``.venv`` (often a link to a shared environment) must never be committed:
    checking such a commit out where the environment itself lives replaces it by the link."""
    root = SRC.parent
    if not (root / ".git").exists():
        return  # not a git checkout (an sdist): nothing can be tracked
    tracked = subprocess.run(
        ["git", "ls-files", "--", ".venv", ".venv-*"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert tracked == []
