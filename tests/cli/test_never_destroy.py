"""Issue 35's "never destroy or misreport" cases on the command line and in the trace loader:
an output path that is an input, a compressed trace cut short in any codec, a column mapping
that feeds one file column twice, drops a column the file has, or cannot apply. Each is one
``error:`` line, exit 2, and the input file is untouched."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import zstandard
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.workloads.traces import TraceError, load_trace

runner = CliRunner()


def _trace_text(rows: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    lines = ["submit_time,duration,num_gpus"]
    for i in range(rows):
        lines.append(f"{i * 7},{int(rng.integers(10, 1000))},{int(rng.integers(1, 9))}")
    return "\n".join(lines) + "\n"


def _refused(args: list[str], *needles: str) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (args, result.exit_code, result.output[-400:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# -- outputs that are inputs --------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["simulate", "-s", "fifo", "--jobs-out", "{trace}"],
        ["simulate", "-s", "fifo", "--jobs-out", "{link}"],
        ["simulate", "-s", "fifo", "--jobs-csv", "{trace}"],
        ["simulate", "-s", "fifo", "--plot", "{trace}"],
        ["compare", "--seeds", "1", "--jobs-out", "{trace}"],
        ["compare", "--seeds", "1", "--plot", "{dotted}"],
    ],
)
def test_an_output_that_is_the_input_trace_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    trace = tmp_path / "jobs.csv"
    text = _trace_text(20)
    trace.write_text(text)
    os.symlink(trace, tmp_path / "link.csv")
    paths = {"trace": "jobs.csv", "link": "link.csv", "dotted": "./sub/../jobs.csv"}
    (tmp_path / "sub").mkdir()
    args = [a.format(**paths) for a in command]
    _refused([args[0], "-w", "trace:jobs.csv", *args[1:]], "would replace the input")
    assert trace.read_text() == text


def test_two_outputs_naming_one_file_are_refused(tmp_path: Path) -> None:
    out = str(tmp_path / "x.csv")
    _refused(
        ["simulate", "-w", "deeprm", "-o", "num_jobs=5", "--jobs-out", out, "--plot", out],
        "--jobs-out and --plot name one file",
    )
    assert not Path(out).exists()


def test_an_output_beside_the_input_is_written(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(_trace_text(20))
    out = tmp_path / "jobs_out.csv"
    result = runner.invoke(
        app, ["simulate", "-w", f"trace:{trace}", "-s", "fifo", "--jobs-out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("trace_id,")


# -- compressed traces cut short ----------------------------------------------------------

CODECS: dict[str, Callable[[bytes], bytes]] = {
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "zst": lambda data: zstandard.ZstdCompressor().compress(data),
}


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("codec", sorted(CODECS))
def test_a_cut_compressed_trace_is_an_error_in_every_codec(
    tmp_path: Path, codec: str, fraction: float
) -> None:
    data = _trace_text(20_000, seed=1).encode()
    packed = CODECS[codec](data)
    path = tmp_path / f"cut.csv.{codec}"
    path.write_bytes(packed[: int(len(packed) * fraction)])
    with pytest.raises(TraceError, match="ended before the end-of-stream marker"):
        load_trace(path)
    _refused(["trace", "info", str(path)], "ended before the end-of-stream marker")


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_a_small_cut_compressed_trace_is_an_error(tmp_path: Path, codec: str) -> None:
    packed = CODECS[codec](_trace_text(3).encode())
    path = tmp_path / f"small.csv.{codec}"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(TraceError, match=f"small.csv.{codec}: cannot read as CSV"):
        load_trace(path)


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_whole_compressed_traces_load_every_job(tmp_path: Path, codec: str) -> None:
    text = _trace_text(20_000, seed=1)
    path = tmp_path / f"whole.csv.{codec}"
    path.write_bytes(CODECS[codec](text.encode()))
    plain = tmp_path / "whole.csv"
    plain.write_text(text)
    assert len(load_trace(path).jobs) == len(load_trace(plain).jobs) == 20_000


def test_a_zst_of_several_frames_loads_every_frame(tmp_path: Path) -> None:
    text = _trace_text(300, seed=2)
    head, tail = text[:2000].rsplit("\n", 1)
    compress = zstandard.ZstdCompressor().compress
    path = tmp_path / "frames.csv.zst"
    path.write_bytes(compress((head + "\n").encode()) + compress((tail + text[2000:]).encode()))
    assert len(load_trace(path).jobs) == 300


# -- column mappings ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "columns", "needle"),
    [
        ("submit_time,duration,num_gpus", "submit_time=duration", "also read as the trace's"),
        ("ts,duration,num_gpus", "submit_time=ts,duration=ts", "maps both submit_time and"),
        ("submit_time,ts,duration,num_gpus", "submit_time=ts", "own submit_time column"),
        ("submit_time,duration,num_gpus", "submit_time=x,SUBMIT_TIME=y", "mapped twice"),
        ("submit_time,duration,num_gpus", "num_gpus=submit_time", "also read as the trace's"),
    ],
)
def test_a_mapping_that_feeds_a_column_twice_or_drops_one_is_refused(
    tmp_path: Path, header: str, columns: str, needle: str
) -> None:
    path = tmp_path / "t.csv"
    width = len(header.split(","))
    path.write_text(header + "\n" + "\n".join(",".join(["5"] * width) for _ in range(3)) + "\n")
    with pytest.raises(ValueError, match=needle):
        load_trace(path, columns=columns)
    _refused(["trace", "info", str(path), "--columns", columns], needle)
    _refused(["simulate", "-w", f"trace:{path}", "-s", "fifo", "-o", f"columns={columns}"], needle)


def test_a_mapping_that_swaps_two_columns_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("submit_time,duration,num_gpus\n50,0,1\n70,10,1\n")
    work = load_trace(path, columns="submit_time=duration,duration=submit_time")
    assert [j.total_work for j in work.jobs] == [50.0, 70.0]


@pytest.mark.parametrize("source", ["philly", "philly:6214e9"])
def test_columns_with_the_shipped_philly_trace_is_refused(source: str) -> None:
    _refused(["trace", "info", source, "--columns", "submit_time=x"], "--columns applies to")
    _refused(["simulate", "-w", source, "-o", "columns=submit_time=x"], "no option 'columns'")
