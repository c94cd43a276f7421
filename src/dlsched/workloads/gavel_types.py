"""Which of Gavel's job types a job of another workload is (``-o job_types=model|PATH``).

Gavel measured 26 job types (`dlsched.models.gavel_table.JOB_TYPES`); dlsched's traces and
generators name other models. `type_of_model` maps a model name to a Gavel job type
deterministically, `gavel_scale` picks the measured size closest below a job's GPUs, and
`read_job_types` reads an explicit per-job mapping from a CSV file.
"""

from __future__ import annotations

import csv
import zlib
from pathlib import Path

from dlsched.models.gavel_table import JOB_TYPES, throughputs

MODEL_TO_GAVEL: dict[str, str] = {
    "resnet-50": "ResNet-50 (batch size 64)",
    "inception-v3": "ResNet-50 (batch size 32)",
    "vgg-16": "ResNet-50 (batch size 16)",
    "alexnet": "ResNet-18 (batch size 256)",
    "transformer": "Transformer (batch size 64)",
    "deepspeech": "LM (batch size 20)",
}
"""dlsched's trace models (`dlsched.models.locality.SENSITIVITY`) to the nearest Gavel job type:
ImageNet CNNs to ResNet-50 (VGG-16, the heaviest per image, at the smallest batch; Inception-v3
at 32) or, for the light AlexNet, to ResNet-18 at its largest batch; Transformer to Transformer;
DeepSpeech, a recurrent network, to Gavel's recurrent language model (LM)."""

_NAMES = tuple(j.name for j in JOB_TYPES)
_MEASURED_SCALES = (8, 4, 2, 1)


def type_of_model(model: str) -> str:
    """The Gavel job type of a job whose model is ``model``: Gavel's own name as it is, a
    `MODEL_TO_GAVEL` entry, else job type ``CRC-32(model) mod 26`` (stable across runs)."""
    if model in _NAMES:
        return model
    mapped = MODEL_TO_GAVEL.get(model.lower())
    if mapped is not None:
        return mapped
    return _NAMES[zlib.crc32(model.encode("utf-8")) % len(_NAMES)]


def gavel_scale(job_type: str, num_gpus: int, gpu_types: tuple[str, ...]) -> int:
    """The size whose measured throughputs stand for a job of ``num_gpus`` GPUs: the largest of
    8, 4, 2, 1 not above it that Gavel measured for ``job_type`` with a throughput above 0 on
    every one of ``gpu_types`` (so a job never gets a type it cannot run on); 1 otherwise."""
    table = throughputs()
    for scale in _MEASURED_SCALES:
        if scale > num_gpus:
            continue
        key = (job_type, scale)
        if all(table[t].get(key, 0.0) > 0.0 for t in gpu_types):
            return scale
    return 1


def read_job_types(path: str | Path) -> dict[int, str]:
    """``job_id`` -> Gavel job type from the CSV file ``path`` (columns ``job_id``, ``job_type``;
    others ignored).

    Raises:
        ValueError: one line naming the file, row (the header is row 1) and column of the first
            bad value: a missing column, a job id that is not a whole number >= 0 or repeats, a
            type that is not one of Gavel's.
    """
    where = str(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            fields = [c.strip().lower() for c in reader.fieldnames or ()]
            for column in ("job_id", "job_type"):
                if column not in fields:
                    raise ValueError(
                        f"{where}: no column {column!r} (job_types=PATH needs job_id and job_type)"
                    )
            reader.fieldnames = fields
            mapping: dict[int, str] = {}
            for row_number, row in enumerate(reader, start=2):
                text = (row.get("job_id") or "").strip()
                if not text.isdigit():
                    raise ValueError(
                        f"{where} row {row_number}, column job_id: {text!r} is not a whole "
                        "number >= 0"
                    )
                job_id = int(text)
                if job_id in mapping:
                    raise ValueError(
                        f"{where} row {row_number}, column job_id: job {job_id} is listed twice"
                    )
                kind = (row.get("job_type") or "").strip()
                if kind not in _NAMES:
                    raise ValueError(
                        f"{where} row {row_number}, column job_type: {kind!r} is not one of "
                        "Gavel's job types (e.g. 'ResNet-50 (batch size 64)')"
                    )
                mapping[job_id] = kind
    except OSError as e:
        raise ValueError(f"job_types: cannot read {where}: {e.strerror or e}") from None
    return mapping
