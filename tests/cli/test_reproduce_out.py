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
    monkeypatch: pytest.MonkeyPatch, args: list[str], want: Path
) -> None:
    seen: list[Path] = []

    def fake_run(name: str, out_dir: Path, *, full: bool = False) -> list[Path]:
        seen.append(out_dir)
        return []

    monkeypatch.setattr(registry, "run_experiment", fake_run)
    result = CliRunner().invoke(app, ["reproduce", "deeprm", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert seen == [want]
