"""Run a function when a module is imported: now if it already is, else right after its import.

`import dlsched` registers its Gymnasium ids and the CLI widens Typer's help, but a ``simulate``
run needs neither Gymnasium (~0.05–0.1 s to import) nor Typer's Rich help module (~0.07 s):
`when_imported` defers that work to the moment something else imports those modules, so that a
start-up pays for them only when they are used.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # importlib.abc costs ~8 ms: the import system needs only the methods
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec

Hook = Callable[[ModuleType], None]


class _HookedLoader:
    """The module's own loader, then the hooks still waiting for the module (taken now, so that
    a spec found but never loaded, as by ``importlib.util.find_spec``, loses none); the module
    keeps its own loader afterwards."""

    def __init__(self, loader: Any, finder: _Finder) -> None:
        self._loader = loader
        self._finder = finder

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        with self._finder.lock:
            hooks = self._finder.hooks.pop(module.__name__, [])
        for hook in hooks:
            hook(module)

    def __getattr__(self, name: str) -> Any:  # is_package, get_code, resource readers, …
        return getattr(self._loader, name)


class _Finder:
    """Finds nothing itself: wraps the loader the other finders give a hooked module."""

    def __init__(self) -> None:
        self.hooks: dict[str, list[Hook]] = {}
        self.lock = threading.Lock()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self.hooks:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = cast("Loader", _HookedLoader(spec.loader, self))
        return spec


_FINDER = _Finder()


def when_imported(module: str, hook: Hook) -> None:
    """Call ``hook(module)`` once the module named ``module`` is imported (now if it is).

    The hook runs right after the module's own code, before the import statement that imported
    it returns; an exception in the hook propagates out of that import statement.
    """
    loaded = sys.modules.get(module)
    if loaded is not None:
        hook(loaded)
        return
    with _FINDER.lock:
        _FINDER.hooks.setdefault(module, []).append(hook)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
