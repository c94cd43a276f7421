"""`benchmarks/peer_side_by_side.py --blox-rounds`: dlsched in Blox's rounds, as a whole process,
without Blox (the side-by-side itself needs Blox's venv: `test_smoke.test_peer_side_by_side`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "peer_side_by_side.py"


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("peer_side_by_side", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_blox_rounds_decide_only_at_round_boundaries(tmp_path: Path) -> None:
    """Jobs submitted at 10 s and 20 s start at once by default, at the 300 s round in Blox's
    rounds (and a started job pays no restart pause)."""
    trace = tmp_path / "trace.csv"
    rows = ["job_id,submit_time,duration,num_gpus,model", "0,10,600,16,inception-v3"]
    rows += ["1,20,100,1,inception-v3"]
    trace.write_text("\n".join(rows) + "\n")
    peer = _module()
    default = peer.run_dlsched(trace, "las", 2)
    rounds = peer.run_dlsched(trace, "las", 2, peer.BLOX_ROUNDS_OPTIONS, "dlsched-rounds")
    assert rounds["sim"] == "dlsched-rounds" and rounds["finished"] == default["finished"] == 2
    assert default["makespan_s"] < 300 + 600
    # the 600 s job starts at the 300 s round, not before, and runs without a pause
    assert rounds["makespan_s"] == 300 + 600
    assert rounds["avg_jct_s"] > default["avg_jct_s"]
