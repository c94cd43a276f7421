"""The packaged Philly trace read without pandas gives what pandas' reading gave (issue 34)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dlsched.workloads.traces import philly_columns as pc
from dlsched.workloads.traces.building import draw_models
from dlsched.workloads.traces.philly import _validated, philly_table
from dlsched.workloads.traces.schema import PHILLY_FILE, TraceError


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder, and `philly_columns` forgetting what this process read."""
    monkeypatch.setenv("DLSCHED_CACHE_DIR", str(tmp_path))
    pc.philly_columns.cache_clear()
    yield tmp_path
    pc.philly_columns.cache_clear()


def test_columns_are_pandas_reading_of_the_file() -> None:
    from importlib import resources

    import pandas as pd

    with resources.as_file(resources.files("dlsched") / "data" / PHILLY_FILE) as path:
        frame = pd.read_csv(
            path,
            dtype={"duration": np.float64, "num_gpus": np.int64, "gpu_time": np.float64},
            engine="c",
        )
    stamps = pd.to_datetime(frame["timestamp"], format="%Y-%m-%d %H:%M:%S", utc=True)
    seconds = (stamps - pd.Timestamp("1970-01-01", tz="UTC")) / pd.Timedelta(seconds=1)
    columns = pc.philly_columns()
    assert np.array_equal(columns.submit_s.astype(np.float64), seconds.to_numpy(np.float64))
    assert np.array_equal(columns.duration_s, frame["duration"].to_numpy())
    assert np.array_equal(columns.num_gpus, frame["num_gpus"].to_numpy())
    assert columns.cluster.tolist() == frame["cluster"].astype(str).tolist()


@pytest.mark.parametrize("vc", [None, "ee9e8c", "6214e9"])
def test_table_is_the_one_validate_builds(vc: str | None) -> None:
    columns = pc.philly_columns()
    n = len(columns.submit_s)
    keep = np.ones(n, dtype=bool) if vc is None else columns.cluster == vc
    rows = np.arange(2, n + 2, dtype=np.int64)
    models = draw_models(n, 3)
    fast = pc.philly_rows(columns, keep, rows, models, None, 3)
    assert fast is not None
    slow = _validated(columns, keep, rows, models, None, 8, 3)
    for got, want in zip(dataclasses.astuple(fast), dataclasses.astuple(slow), strict=True):
        if isinstance(want, np.ndarray):
            assert got.dtype.kind == want.dtype.kind and np.array_equal(got, want)
        else:
            assert got == want


def test_a_job_larger_than_the_cluster_is_refused_as_validate_words_it() -> None:
    with pytest.raises(TraceError, match=r"row \d+, column num_gpus: .* more than the cluster's 8"):
        philly_table("ee9e8c", None, None, None, 1, 8, 0)


def test_the_columns_are_cached_and_a_bad_cache_is_replaced(fresh_cache: Path) -> None:
    first = pc.philly_columns()
    (cached,) = fresh_cache.glob("philly-*.npz")
    pc.philly_columns.cache_clear()
    again = pc.philly_columns()
    assert again.cluster.tolist() == first.cluster.tolist()
    assert np.array_equal(again.submit_s, first.submit_s)
    cached.write_bytes(b"not an npz")
    pc.philly_columns.cache_clear()
    assert np.array_equal(pc.philly_columns().duration_s, first.duration_s)
    with np.load(cached, allow_pickle=False) as saved:  # rewritten, arrays only
        assert sorted(saved.files) == ["cluster", "duration_s", "num_gpus", "submit_s"]


def test_an_empty_cache_setting_writes_nothing(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DLSCHED_CACHE_DIR", "")
    assert len(pc.philly_columns().submit_s) == 82_247
    assert not list(fresh_cache.iterdir())


def test_models_are_drawn_as_before() -> None:
    """The models drawn for a seed, and the array's width, are those the first implementation
    (an object array converted to text) drew: every trace result depends on them."""
    drawn = draw_models(12, 0)
    assert drawn.dtype == np.dtype("<U11")
    assert " ".join(drawn.tolist()) == (
        "transformer transformer resnet-50 alexnet deepspeech deepspeech "
        "transformer deepspeech transformer deepspeech deepspeech resnet-50"
    )
    assert draw_models(0, 0).dtype == np.dtype("<U1")
    whole = draw_models(82_247, 0)
    assert whole.dtype == np.dtype("<U12")
    assert dict(zip(*np.unique(whole, return_counts=True), strict=True)) == {
        "alexnet": 2073,
        "deepspeech": 24592,
        "inception-v3": 2078,
        "resnet-50": 2151,
        "transformer": 49322,
        "vgg-16": 2031,
    }
