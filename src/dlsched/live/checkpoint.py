"""Block files: what a PS writes for a snapshot or a checkpoint, and how shards are restored.

A block file is ``MAGIC``, an 8-byte little-endian header length, a JSON header
``{"version": v, "blocks": [[block, numel, has_momentum], ...]}``, then for each block its
parameters and (if any) momentum as raw float32. No pickle is involved.

The files of one version (one per PS, ``<dir>/ps<id>.blk``, each holding the blocks that PS owned
at that version) together cover every block exactly once.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path

import torch

log = logging.getLogger(__name__)

MAGIC = b"DLSBLK1\n"
_LEN = struct.Struct("<Q")

Shard = dict[int, tuple[torch.Tensor, torch.Tensor | None]]
"""Block index → (parameters, momentum or None), 1-D float32 tensors."""


def confine(path: Path | str, root: Path | str) -> Path:
    """``path`` resolved (symbolic links and ``..`` followed), if it lies inside ``root``.

    Checkpoint and snapshot paths arrive in messages; a job reads and writes only under its own
    directory.

    Raises:
        ValueError: if ``path`` resolves outside ``root``.
    """
    base = Path(root).resolve()
    target = Path(path)
    resolved = (target if target.is_absolute() else base / target).resolve()
    if resolved != base and base not in resolved.parents:
        raise ValueError(f"path {str(path)!r} is outside the job directory {str(base)!r}")
    return resolved


def write_blocks(
    path: Path, version: int, shard: Mapping[int, tuple[torch.Tensor, torch.Tensor | None]]
) -> int:
    """Write ``shard`` at ``version`` to ``path`` atomically; returns bytes written."""
    blocks = sorted(shard)
    header = {
        "version": version,
        "blocks": [[b, int(shard[b][0].numel()), shard[b][1] is not None] for b in blocks],
    }
    raw = json.dumps(header).encode()
    tmp = path.with_suffix(".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    with open(tmp, "wb") as fh:
        fh.write(MAGIC)
        fh.write(_LEN.pack(len(raw)))
        fh.write(raw)
        for b in blocks:
            p, m = shard[b]
            fh.write(p.detach().contiguous().numpy().tobytes())
            size += p.numel() * 4
            if m is not None:
                fh.write(m.detach().contiguous().numpy().tobytes())
                size += m.numel() * 4
    os.replace(tmp, path)
    return size


def read_blocks(path: Path, wanted: Iterable[int] | None = None) -> tuple[int, Shard]:
    """Read the blocks of ``path`` (only those in ``wanted`` if given).

    Returns:
        (version, shard).

    Raises:
        ValueError: if the file is malformed.
    """
    want = None if wanted is None else set(wanted)
    with open(path, "rb") as fh:
        if fh.read(len(MAGIC)) != MAGIC:
            raise ValueError(f"{path}: not a block file")
        (n,) = _LEN.unpack(fh.read(_LEN.size))
        if n > 1 << 24:
            raise ValueError(f"{path}: header too large")
        header = json.loads(fh.read(n))
        version = header.get("version")
        entries = header.get("blocks")
        if not isinstance(version, int) or not isinstance(entries, list):
            raise ValueError(f"{path}: bad header")
        shard: Shard = {}
        for entry in entries:
            if not (isinstance(entry, list) and len(entry) == 3):
                raise ValueError(f"{path}: bad block entry")
            b, numel, has_m = entry
            if not isinstance(b, int) or not isinstance(numel, int) or numel < 0:
                raise ValueError(f"{path}: bad block entry")
            nbytes = numel * 4 * (2 if has_m else 1)
            if want is not None and b not in want:
                fh.seek(nbytes, os.SEEK_CUR)
                continue
            data = fh.read(nbytes)
            if len(data) != nbytes:
                raise ValueError(f"{path}: truncated")
            flat = torch.frombuffer(bytearray(data), dtype=torch.float32)
            shard[b] = (flat[:numel], flat[numel:] if has_m else None)
    return version, shard


def read_files(paths: Iterable[Path | str], wanted: Iterable[int]) -> Shard:
    """Gather the blocks ``wanted`` from the block files ``paths`` (all of one version).

    Raises:
        ValueError: if a wanted block is missing or the files disagree on the version.
    """
    want = set(wanted)
    shard: Shard = {}
    versions: set[int] = set()
    for path in paths:
        missing = want - set(shard)
        if not missing:
            break
        version, part = read_blocks(Path(path), missing)
        versions.add(version)
        shard.update(part)
    if len(versions) > 1:
        raise ValueError(f"block files of versions {sorted(versions)}")
    missing = want - set(shard)
    if missing:
        raise ValueError(f"blocks {sorted(missing)[:10]} missing from the block files")
    return shard
