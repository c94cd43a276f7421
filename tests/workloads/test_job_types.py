"""Other workloads on a heterogeneous cluster with a per-job Gavel type (``-o job_types=``):
``drawn`` (the default), ``model`` (a fixed mapping of model and size) and a CSV file."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.models.gavel_table import throughputs
from dlsched.models.typed import TypedSpeed
from dlsched.runner import simulate
from dlsched.workloads.gavel_types import MODEL_TO_GAVEL, gavel_scale, type_of_model
from dlsched.workloads.registry import make_workload

CLUSTER = "v100:2x8,k80:2x8"


def _relative(job_type: str, scale: int) -> float:
    table = throughputs()
    return table["k80"][(job_type, scale)] / table["v100"][(job_type, scale)]


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.csv"
    rows = ["job_id,submit_time,duration,num_gpus,model"]
    models = ["resnet-50", "transformer", "vgg-16", "deepspeech", "alexnet", "inception-v3"]
    for i, model in enumerate(models * 2):
        rows.append(f"{i},{60 * i},{600 + 100 * i},{(1, 2, 4, 8)[i % 4]},{model}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_model_mapping_follows_each_jobs_model_and_size_whatever_the_seed(
    tmp_path: Path,
) -> None:
    trace = f"trace:{_trace(tmp_path)}"
    typed = [make_workload(trace, seed=s, cluster=CLUSTER, job_types="model") for s in (1, 2)]
    for workload in typed:
        model = workload.model
        assert isinstance(model, TypedSpeed) and workload.params["job_types"] == "model"
        for spec in workload.jobs:
            kind = MODEL_TO_GAVEL[spec.model]
            scale = gavel_scale(kind, spec.num_workers, ("v100", "k80"))
            assert scale == min(spec.num_workers, 8)  # every mapped type is measured at 1-8
            assert model.rate(spec, "k80") == pytest.approx(_relative(kind, scale))
            assert model.rate(spec, "v100") == 1.0  # the reference type: as the trace says
    one, two = (w.model for w in typed)
    assert isinstance(one, TypedSpeed) and isinstance(two, TypedSpeed)
    assert all(one.rate(s, "k80") == two.rate(s, "k80") for s in typed[0].jobs)
    drawn = [make_workload(trace, seed=s, cluster=CLUSTER).model for s in (1, 2)]
    spec = typed[0].jobs[0]
    assert {m.rate(spec, "k80") for m in drawn if isinstance(m, TypedSpeed)} != {
        one.rate(spec, "k80")
    }  # the default draws a type per job (seeded), the mapping does not


def test_a_size_never_maps_to_a_type_the_job_cannot_run_on() -> None:
    # ResNet-50 at batch 128 does not fit a K80 on 2-8 GPUs (Gavel measured 0.0)
    kind = "ResNet-50 (batch size 128)"
    assert gavel_scale(kind, 4, ("v100", "p100")) == 4
    assert gavel_scale(kind, 4, ("v100", "k80")) == 1
    assert gavel_scale("A3C", 8, ("v100", "k80")) == 1  # measured on one GPU only
    assert type_of_model("A3C") == "A3C"
    assert type_of_model("some-new-net") == type_of_model("some-new-net")


def test_a_csv_gives_listed_jobs_their_type_and_the_rest_follow_their_model(
    tmp_path: Path,
) -> None:
    mapping = tmp_path / "types.csv"
    mapping.write_text("job_id,job_type\n0,A3C\n3,CycleGAN\n999,A3C\n")
    workload = make_workload(
        f"trace:{_trace(tmp_path)}", seed=1, cluster=CLUSTER, job_types=str(mapping)
    )
    model = workload.model
    assert isinstance(model, TypedSpeed)
    jobs = {spec.job_id: spec for spec in workload.jobs}
    assert model.rate(jobs[0], "k80") == pytest.approx(_relative("A3C", 1))
    assert model.rate(jobs[3], "k80") == pytest.approx(_relative("CycleGAN", 1))
    assert model.rate(jobs[1], "k80") == pytest.approx(_relative(MODEL_TO_GAVEL["transformer"], 2))
    assert workload.params["job_types_unmatched"] == 1  # job 999 is not in the trace: said


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("job_id,kind\n0,A3C\n", "no column 'job_type'"),
        ("job_id,job_type\nx,A3C\n", "row 2, column job_id: 'x' is not a whole number"),
        ("job_id,job_type\n0,A3C\n0,A3C\n", "row 3, column job_id: job 0 is listed twice"),
        ("job_id,job_type\n0,VGG\n", "row 2, column job_type: 'VGG' is not one of Gavel's"),
    ],
)
def test_a_bad_mapping_file_is_refused_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    mapping = tmp_path / "types.csv"
    mapping.write_text(text)
    with pytest.raises(ValueError, match=message):
        make_workload(f"trace:{_trace(tmp_path)}", cluster=CLUSTER, job_types=str(mapping))


def test_job_types_without_a_typed_cluster_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"job_types= .* needs cluster="):
        make_workload(f"trace:{_trace(tmp_path)}", job_types="model")


def test_philly_runs_on_a_typed_cluster_with_the_model_mapping() -> None:
    run = simulate(
        "philly:ee9e8c",
        "fifo",
        1,
        max_jobs=40,
        cluster="v100:4x8,p100:4x8,k80:4x8",
        job_types="model",
    )
    summary = run.summary()
    assert summary["finished"] == summary["jobs"] == 40
    assert run.params["job_types"] == "model"
