"""``reproduce sched2`` labels each learned row with how it was trained and prints the paper's
number only beside the row trained by the paper's method."""

from __future__ import annotations

from dlsched.papers.sched2.experiments import HEURISTICS, PAPER_CLAIM, SCHEDULERS, learned_rows


def test_each_learned_row_says_how_it_was_trained_and_only_the_paper_row_has_the_claim() -> None:
    assert "sched2" in SCHEDULERS and "sched2:paper" in SCHEDULERS
    fig7 = [
        {"one_gpu_frac": 0.68, "scheduler": name, "avg_jct_s": jct, "makespan_s": 2 * jct}
        for name, jct in zip(SCHEDULERS, range(100, 100 + 10 * len(SCHEDULERS), 10), strict=True)
    ]
    lines = learned_rows(fig7)
    paper = [line for line in lines if line.startswith("| sched2:paper |")]
    shipped = [line for line in lines if line.startswith("| sched2 |")]
    assert len(paper) == 1 and len(shipped) == 1
    assert "paper's method" in paper[0] and PAPER_CLAIM["sched2:paper"] in paper[0]
    assert "SCED²-L" in shipped[0] and "not the paper's method" in shipped[0]
    masked = [line for line in lines if line.startswith("| sched2:paper-masked |")]
    assert len(masked) == 1 and "not the paper's method" in masked[0] and "4.6×" not in masked[0]
    assert "4.6×" not in shipped[0] and sum("4.6×" in line for line in lines) == 1
    best_jct = min(r["avg_jct_s"] for r in fig7 if r["scheduler"] in HEURISTICS)
    assert f"{100 / best_jct:.2f}×" in shipped[0]  # sched2's JCT (100) over the best heuristic's
