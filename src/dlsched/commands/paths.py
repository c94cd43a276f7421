"""Output paths that would destroy an input: refused before any run.

``dlsched simulate -w trace:jobs.csv --jobs-out jobs.csv`` would replace the trace with the
results table, and a command that clears its output folder would delete a trace inside it. The
commands call `check_outputs` with every path they write (files) or clear (folders) and every
file they read, before they start.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["check_out_folder", "check_outputs", "workload_inputs"]


def workload_inputs(workload: str) -> list[Path]:
    """The files a workload spec reads: the path of ``trace:PATH``, none for generators and
    the shipped Philly trace."""
    name, sep, arg = workload.partition(":")
    return [Path(arg)] if name == "trace" and sep and arg else []


def _same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name one file: the same resolved path, or (both existing) one inode,
    which catches hard links and symbolic links alike."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _inside(folder: Path, path: Path) -> bool:
    """``path`` lies in ``folder`` or below it (resolved paths)."""
    return path.resolve().is_relative_to(folder.resolve())


def check_outputs(
    outputs: Mapping[str, Path | None],
    inputs: Iterable[Path],
    folders: Mapping[str, Path | None] | None = None,
) -> None:
    """Refuse an output that equals an input, or two outputs that name one file.

    Args:
        outputs: option name (``--jobs-out``) → the file it writes (None: not given).
        inputs: the files the command reads.
        folders: option name → a folder the command writes whole or clears: refused when
            an input lies inside it.

    Raises:
        ValueError: one line naming the option, the path and the input it would overwrite.
    """
    given = [(option, path) for option, path in outputs.items() if path is not None]
    sources = list(inputs)
    for option, path in given:
        for source in sources:
            if _same_file(path, source):
                raise ValueError(
                    f"{option}: {str(path)!r} is the input {str(source)!r}; writing it would "
                    "replace the input: give another path"
                )
    for k, (option, path) in enumerate(given):
        for other, other_path in given[k + 1 :]:
            if _same_file(path, other_path):
                raise ValueError(f"{option} and {other} name one file {str(path)!r}: give two")
    for option, folder in (folders or {}).items():
        if folder is None:
            continue
        for source in sources:
            if _inside(folder, source):
                raise ValueError(
                    f"{option}: {str(folder)!r} holds the input {str(source)!r}; give an output "
                    "folder that does not contain an input"
                )


def check_out_folder(folder: Path, option: str) -> None:
    """An output folder named by the user: it may be new, but its parent must exist (as
    ``mkdir`` without ``-p``), so a mistyped ``/nonexistent/dir`` is refused rather than built.

    Raises:
        ValueError: naming ``option``: the parent is missing, or the path is a file.
    """
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option}: {str(folder)!r} is a file, not a folder")
    parent = folder.absolute().parent
    if not parent.is_dir():
        raise ValueError(
            f"{option}: the folder {str(parent)!r} does not exist; create it first or give "
            "another output folder"
        )
