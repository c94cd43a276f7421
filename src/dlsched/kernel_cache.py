"""Numba's on-disk kernel cache, kept in step with every source file of a kernel directory.

``@njit(cache=True)`` checks a cached kernel against the source of the file that defines it
only: when a kernel's callee in another file changes (a helper in ``sim/las_core_parts.py``
edited, or a ``git checkout`` that changes only that file), numba loads the old machine code and
the results are silently stale. `refresh` hashes every ``.py`` of a kernel directory that
mentions numba and, when the hash differs from the one recorded next to numba's cache files,
deletes this Python version's cache files of those modules, so that numba compiles them again.
An installed wheel is safe without it (pip rewrites every file); a developer's checkout is not.
Each kernel module calls it before its first compiled call (``sim``: `compile_kernel`; ``dl2``:
at import).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from contextlib import suppress
from pathlib import Path

logger = logging.getLogger(__name__)

_REFRESHED: set[str] = set()
"""The directories `refresh` has already checked in this process."""


def refresh(module_file: str) -> None:
    """Delete numba's cached kernels of the directory of ``module_file`` (a kernel module's
    ``__file__``) when any numba module there changed.

    Once per directory and process; ~1 ms (reads and hashes the directory's ``.py`` files).
    Never raises for the file system: a read-only install, another process deleting or
    writing the same files, or no ``__pycache__`` yet leave at worst one needless recompile.
    """
    directory = Path(os.path.abspath(module_file)).parent
    if str(directory) in _REFRESHED:
        return
    _REFRESHED.add(str(directory))
    digest = hashlib.sha256()
    modules: list[str] = []
    for path in sorted(directory.glob("*.py")):
        try:
            text = path.read_bytes()
        except OSError:  # removed meanwhile (a checkout under way): nothing of it to compile
            continue
        if b"numba" in text:
            digest.update(path.name.encode() + b"\0" + text + b"\0")
            modules.append(path.stem + ".")
    if modules:
        for cache_dir in _cache_dirs(directory):
            _refresh_dir(cache_dir, digest.hexdigest(), tuple(modules))


def _cache_dirs(directory: Path) -> list[Path]:
    """Where numba may keep ``directory``'s cached kernels, those that exist: ``NUMBA_CACHE_DIR``
    and the ``__pycache__`` (created here when missing, as numba would, so that the first
    compile's files get a stamp) and the user-wide cache (numba's fallback for a read-only
    install)."""
    made = [directory / "__pycache__"]
    found: list[Path] = []
    try:  # numba's own path rule, so that this follows it; numba is imported by every caller
        from numba.core import config
        from numba.core.caching import _CacheLocator
        from numba.misc.appdirs import AppDirs

        subpath = _CacheLocator.get_suitable_cache_subpath(str(directory / "_.py"))
        found.append(Path(AppDirs(appname="numba", appauthor=False).user_cache_dir, subpath))
        user_dir = getattr(config, "CACHE_DIR", "")  # set at run time from NUMBA_CACHE_DIR
        if user_dir:
            made.append(Path(user_dir, subpath))
    except (ImportError, AttributeError) as error:  # a numba that moved them: in-tree only
        logger.debug("numba's cache locations not found (%s)", error)
    for path in made:
        with suppress(OSError):
            path.mkdir(parents=True, exist_ok=True)
    return [path for path in made + found if path.is_dir()]


def _refresh_dir(cache_dir: Path, stamp: str, modules: tuple[str, ...]) -> None:
    """Delete ``cache_dir``'s cache files of ``modules`` (``"name."`` prefixes) for this Python
    unless its stamp file records ``stamp``; then record it."""
    stamp_file = cache_dir / f"kernel-sources.{sys.implementation.cache_tag}.sha256"
    with suppress(OSError):
        if stamp_file.read_text() == stamp:
            return
    # numba's file names: <module>.<qualname>-<line>.py<major><minor><abiflags>[.<n>].nbc/.nbi
    version = f".py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}."
    try:
        removed = 0
        for entry in os.scandir(cache_dir):
            name = entry.name
            if name.startswith(modules) and name.endswith((".nbi", ".nbc")) and version in name:
                with suppress(FileNotFoundError):  # another process removed it first
                    os.unlink(entry.path)
                    removed += 1
        partial = cache_dir / f"{stamp_file.name}.{os.getpid()}"
        partial.write_text(stamp)
        os.replace(partial, stamp_file)  # atomic: a reader sees the old stamp or the new one
    except OSError as error:  # read-only: numba cannot write here either (it uses another place)
        logger.debug("kernel cache %s not refreshed: %s", cache_dir, error)
        return
    if removed:
        logger.info("kernel sources changed: removed %d cached files in %s", removed, cache_dir)
