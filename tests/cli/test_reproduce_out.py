"""``dlsched reproduce NAME --out DIR`` writes into DIR as given; out/NAME without --out."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.experiments import registry


@pytest.mark.parametrize(
    ("args", "want"),
    [(["--out", "out/deeprm"], Path("out/deeprm")), ([], Path("out/deeprm"))],
)
def test_reproduce_uses_out_as_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str], want: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()  # --out's parent must exist
    seen: list[Path] = []

    def fake_run(name: str, out_dir: Path, *, full: bool = False) -> list[Path]:
        seen.append(out_dir)
        return []

    monkeypatch.setattr(registry, "run_experiment", fake_run)
    result = CliRunner().invoke(app, ["reproduce", "deeprm", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert seen == [want]


@pytest.mark.parametrize("out", ["{tmp}/missing/deeprm", "{tmp}/a/b/c"])
def test_reproduce_refuses_an_out_whose_parent_is_missing(tmp_path: Path, out: str) -> None:
    """Issue 35: ``--out /nonexistent/dir`` silently created the whole path."""
    result = CliRunner().invoke(app, ["reproduce", "deeprm", "--out", out.format(tmp=tmp_path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not exist; create it first" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_reproduce_refuses_an_out_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    path.write_text("keep me\n")
    result = CliRunner().invoke(app, ["reproduce", "deeprm", "--out", str(path)])
    assert result.exit_code == 2 and "is a file, not a folder" in result.stderr
    assert path.read_text() == "keep me\n"
