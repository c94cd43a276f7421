"""Fuzz corpus: hundreds of seeded malformed traces either load or fail with one line.

Each case mutates a small valid trace (columns dropped, repeated or renamed; non-numeric,
negative, NaN/inf and huge cells; empty files and blank lines; binary bytes and bad encodings;
truncated or corrupt compressed files; wrong delimiters; very long cells; Parquet of wrong
types; ...). The loader must either return a workload or raise `TraceError` whose message is one
line; the CLI must answer such a file with exit code 2, one stderr line and no traceback.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.workloads.traces import TraceError, load_trace, trace_info

CORPUS_SIZE = 440
COLUMNS = ["job_id", "submit_time", "duration", "num_gpus", "priority", "cpu", "mem_gb"]
NUMERIC = ["job_id", "submit_time", "duration", "num_gpus", "priority", "cpu", "mem_gb"]
BAD_CELLS = [
    "abc",
    "-5",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e400",
    "1e308",
    "99999999999999999999999",
    "",
    " ",
    "1.5",
    "0",
    "[/]",
    "[bold]x",
    "0x10",
    "1,000",
    "true",
    "2017-10-09 07:01:55",
    "\u00e9t\u00e9",
    '"1\n2"',
    "1" * 5000,
    "x" * 200_000,
]

Case = tuple[str, bytes]
"""A file suffix and the file's bytes."""


def _rows(rng: np.random.Generator, n: int = 8) -> list[list[str]]:
    rows = []
    for i in range(n):
        rows.append(
            [
                str(i),
                f"{i * float(rng.integers(1, 100)):.1f}",
                f"{float(rng.integers(10, 5000))}",
                str(int(rng.choice([1, 2, 4, 8]))),
                "0",
                "4",
                "32",
            ]
        )
    return rows


def _csv(header: list[str], rows: list[list[str]], sep: str = ",") -> bytes:
    lines = [sep.join(header)] + [sep.join(r) for r in rows]
    return ("\n".join(lines) + "\n").encode()


def _drop_column(rng: np.random.Generator) -> Case:
    k = int(rng.integers(len(COLUMNS)))
    rows = [r[:k] + r[k + 1 :] for r in _rows(rng)]
    return ".csv", _csv(COLUMNS[:k] + COLUMNS[k + 1 :], rows)


def _duplicate_column(rng: np.random.Generator) -> Case:
    k = int(rng.integers(len(COLUMNS)))
    rows = [[*r, r[k]] for r in _rows(rng)]
    name = COLUMNS[k] if rng.random() < 0.5 else COLUMNS[k].upper() + " "
    return ".csv", _csv([*COLUMNS, name], rows)


def _rename_column(rng: np.random.Generator) -> Case:
    header = list(COLUMNS)
    k = int(rng.integers(len(header)))
    header[k] = rng.choice([header[k] + "s", header[k][:-1], "", "[/]", "x" * 3000, "\u00e9"])
    return ".csv", _csv(header, _rows(rng))


def _bad_cell(rng: np.random.Generator) -> Case:
    rows = _rows(rng)
    for _ in range(int(rng.integers(1, 4))):
        r = int(rng.integers(len(rows)))
        c = COLUMNS.index(str(rng.choice(NUMERIC)))
        rows[r][c] = str(rng.choice(BAD_CELLS))
    return ".csv", _csv(COLUMNS, rows)


def _empty_or_blank(rng: np.random.Generator) -> Case:
    header = _csv(COLUMNS, [])
    body = _csv(COLUMNS, _rows(rng))
    choice = int(rng.integers(6))
    return ".csv", [
        b"",
        b"\n\n\n",
        header,
        b"\n\n" + body,
        body.replace(b"\n", b"\n\n"),
        b",,,,,,\n" + body,
    ][choice]


def _binary(rng: np.random.Generator) -> Case:
    size = int(rng.integers(1, 2000))
    data = rng.integers(0, 256, size=size, dtype=np.uint8).tobytes()
    if rng.random() < 0.5:
        data = _csv(COLUMNS, _rows(rng)) + data
    return str(rng.choice([".csv", ".csv.gz", ".parquet", ".csv.zst"])), data


def _bad_encoding(rng: np.random.Generator) -> Case:
    body = bytearray(_csv(COLUMNS, _rows(rng)))
    for _ in range(int(rng.integers(1, 5))):
        body.insert(int(rng.integers(len(body))), int(rng.choice([0x80, 0xFF, 0xC3, 0x00])))
    if rng.random() < 0.3:
        return ".csv", "\n".join(",".join(COLUMNS) for _ in range(3)).encode("utf-16")
    return ".csv", bytes(body)


def _compressed(rng: np.random.Generator) -> Case:
    body = _csv(COLUMNS, _rows(rng))
    kind = str(rng.choice(["gz", "bz2", "xz", "zst"]))
    if kind == "zst":
        import zstandard

        packed = zstandard.ZstdCompressor().compress(body)
    else:
        packed = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](body)
    cut = int(rng.integers(0, 3))
    if cut == 1:
        packed = packed[: int(rng.integers(1, len(packed)))]  # truncated
    elif cut == 2:
        flipped = bytearray(packed)
        flipped[int(rng.integers(len(flipped)))] ^= 0xFF
        packed = bytes(flipped)
    return f".csv.{kind}", packed


def _wrong_delimiter(rng: np.random.Generator) -> Case:
    sep = str(rng.choice([";", "\t", "|", " "]))
    return ".csv", _csv(COLUMNS, _rows(rng), sep)


def _ragged(rng: np.random.Generator) -> Case:
    rows = _rows(rng)
    r = int(rng.integers(len(rows)))
    choice = int(rng.integers(3))
    if choice == 0:
        rows[r] = rows[r] + ["1", "2"]
    elif choice == 1:
        rows[r] = rows[r][:2]
    else:
        rows[r][1] = '"' + rows[r][1]  # unclosed quote
    return ".csv", _csv(COLUMNS, rows)


def _long_cell(rng: np.random.Generator) -> Case:
    rows = _rows(rng)
    rows[int(rng.integers(len(rows)))][int(rng.integers(len(COLUMNS)))] = "7" * 200_000
    return ".csv", _csv(COLUMNS, rows)


def _parquet(rng: np.random.Generator) -> Case:
    rows = _rows(rng)
    frame = pd.DataFrame(rows, columns=COLUMNS).astype(
        {"submit_time": float, "duration": float, "num_gpus": int}
    )
    column = str(rng.choice(["submit_time", "duration", "num_gpus", "job_id"]))
    n = len(frame)
    kind = int(rng.integers(7))
    if kind == 0:
        frame[column] = ["x"] * n
    elif kind == 1:
        frame[column] = [True] * n
    elif kind == 2:
        frame[column] = pd.date_range("2020-01-01", periods=n)
    elif kind == 3:
        frame[column] = [[1, 2]] * n
    elif kind == 4:
        frame[column] = pd.to_timedelta(np.arange(n), unit="s")
    elif kind == 5:
        frame[column] = [None] * n
    else:
        frame = frame.drop(columns=[column])
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    return ".parquet", buffer.getvalue()


def _absurd_cluster(rng: np.random.Generator) -> Case:
    n = int(rng.integers(20, 60))
    rows = [[str(i), "0", "36000", "4096", "0", "4", "32"] for i in range(n)]
    return ".csv", _csv(COLUMNS, rows)


def _byte_flips(rng: np.random.Generator) -> Case:
    body = bytearray(_csv(COLUMNS, _rows(rng)))
    for _ in range(int(rng.integers(1, 10))):
        body[int(rng.integers(len(body)))] = int(rng.integers(32, 127))
    return ".csv", bytes(body)


MUTATIONS: list[Callable[[np.random.Generator], Case]] = [
    _drop_column,
    _duplicate_column,
    _rename_column,
    _bad_cell,
    _empty_or_blank,
    _binary,
    _bad_encoding,
    _compressed,
    _wrong_delimiter,
    _ragged,
    _long_cell,
    _parquet,
    _absurd_cluster,
    _byte_flips,
]


def corpus(folder: Path) -> list[Path]:
    """Write `CORPUS_SIZE` seeded malformed traces under ``folder``."""
    paths = []
    for i in range(CORPUS_SIZE):
        rng = np.random.default_rng(i)
        suffix, data = MUTATIONS[i % len(MUTATIONS)](rng)
        path = folder / f"case{i:03d}{suffix}"
        path.write_bytes(data)
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return corpus(tmp_path_factory.mktemp("fuzz"))


def _outcome(load: Callable[[], object]) -> str:
    """'ok', or the one-line TraceError message; anything else fails the test."""
    try:
        load()
    except TraceError as exc:
        message = str(exc)
        assert message and "\n" not in message and "\r" not in message, repr(message[:300])
        assert len(message) < 1500, message[:300]
        return message
    return "ok"


@pytest.mark.slow
def test_every_malformed_trace_loads_or_fails_with_one_line(cases: list[Path]) -> None:
    failed = 0
    for path in cases:
        for load in (load_trace, trace_info):
            if _outcome(partial(load, path)) != "ok":
                failed += 1
    assert len(cases) >= 400
    # The corpus must exercise failures, not just valid files.
    assert failed > len(cases)


def test_known_malformations_are_refused_with_their_reason(tmp_path: Path) -> None:
    header = "submit_time,duration,num_gpus"
    dup = tmp_path / "dup.csv"
    dup.write_text("submit_time,duration,duration,num_gpus\n0,1,2,1\n")
    with pytest.raises(TraceError, match="column 'duration' appears twice"):
        load_trace(dup)
    blank = tmp_path / "blank.csv"
    blank.write_text(f"\n\n{header}\n0,100,1\n10,-5,1\n")
    with pytest.raises(TraceError, match=r"row 5, column duration: -5 is negative"):
        load_trace(blank)
    big = tmp_path / "big.csv"
    big.write_text(f"{header}\n0,100,1\n0,{'x' * 1_000_000},1\n")
    with pytest.raises(TraceError) as caught:
        load_trace(big)
    assert len(str(caught.value)) < 300 and "x" * 60 + "…" in str(caught.value)
    huge = tmp_path / "huge.csv"
    huge.write_text(header + "\n" + "".join("0,36000,4096\n" for _ in range(50)))
    with pytest.raises(TraceError, match=r"MAX_SIZED_SERVERS \(4,096\).*row 2 \(job 0"):
        load_trace(huge)
    assert len(load_trace(huge, servers=512).jobs) == 50


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    pipe = tmp_path / "trace.csv"
    os.mkfifo(pipe)
    with pytest.raises(TraceError, match="not a regular file"):
        load_trace(pipe)
    with pytest.raises(TraceError, match="not a regular file"):
        trace_info(pipe)


def test_zstd_trace_loads(tmp_path: Path) -> None:
    import zstandard

    path = tmp_path / "t.csv.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b"submit_time,duration,num_gpus\n0,5,1\n"))
    assert len(load_trace(path).jobs) == 1


def _failing(cases: list[Path], count: int) -> list[Path]:
    chosen = []
    for path in cases:
        if _outcome(partial(load_trace, path)) != "ok":
            chosen.append(path)
        if len(chosen) == count:
            break
    return chosen


def test_cli_answers_malformed_traces_with_exit_2_and_one_line(cases: list[Path]) -> None:
    runner = CliRunner()
    for path in _failing(cases[::3], 20):
        for args in (["trace", "info", str(path)], ["simulate", "-w", f"trace:{path}"]):
            result = runner.invoke(app, args)
            if args[0] == "trace" and result.exit_code == 0:
                continue  # trace info skips bad rows, so some files summarise fine
            assert result.exit_code == 2, (args, result.output[-500:])
            assert "Traceback" not in result.output


@pytest.mark.slow
def test_real_cli_process_prints_one_line_and_exits_2(cases: list[Path], tmp_path: Path) -> None:
    markup = tmp_path / "data" / "x[/].csv"  # no such file; must print literally
    sample = [*_failing(cases[1::7], 6), markup]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    for path in sample:
        for args in (["trace", "info", str(path)], ["simulate", "-w", f"trace:{path}"]):
            done = subprocess.run(
                [sys.executable, "-m", "dlsched.cli", *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
                check=False,
            )
            if args[0] == "trace" and done.returncode == 0:
                continue
            assert done.returncode == 2, (args, done.stderr[-500:])
            assert "Traceback" not in done.stderr
            assert len(done.stderr.strip().splitlines()) == 1, done.stderr[-500:]
            if path == markup:
                assert "data/x[/].csv: no such file" in done.stderr


def test_progress_reports_each_stage(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("submit_time,duration,num_gpus\n0,5,1\n3,7,2\n")
    lines: list[str] = []
    load_trace(path, progress=lines.append)
    assert [line.split()[0] for line in lines] == ["reading", "read", "2", "building"]
    assert "read 2 rows" in lines[1]
