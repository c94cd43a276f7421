"""deploy/: valid against the Kubernetes schemas, and what ``dlsched k8s manifests`` prints."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.k8s.objects import ObjectError, parse_dljob
from dlsched.k8s.pytorchjob import parse_pytorchjob

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _docs() -> list[dict]:
    return [d for f in sorted(DEPLOY.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text())]


CUSTOM = ("DLJob", "PyTorchJob")


@pytest.mark.parametrize(
    "doc", [d for d in _docs() if d["kind"] not in CUSTOM], ids=lambda d: d["kind"]
)
def test_built_in_kinds_validate_strictly(doc: dict) -> None:
    kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def _crd_schema() -> dict:
    (crd,) = [d for d in _docs() if d["kind"] == "CustomResourceDefinition"]
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_the_example_dljob_matches_the_crd_schema_and_parses() -> None:
    (example,) = [d for d in _docs() if d["kind"] == "DLJob"]
    jsonschema.Draft4Validator(_crd_schema()).validate(example)
    job = parse_dljob({**example, "metadata": {**example["metadata"], "uid": "0" * 32}})
    assert job.spec.num_workers == 4 and job.spec.worker_demand.mem == 16.0


def test_the_crd_schema_rejects_a_bad_job() -> None:
    (example,) = [d for d in _docs() if d["kind"] == "DLJob"]
    bad = {**example, "spec": {**example["spec"], "arch": "mpi"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(_crd_schema()).validate(bad)
    with pytest.raises(ObjectError, match=r"spec\.arch: must be one of ps, allreduce, replica"):
        parse_dljob(bad)


def test_the_example_pytorchjob_parses() -> None:
    (example,) = [d for d in _docs() if d["kind"] == "PyTorchJob"]
    job = parse_pytorchjob({**example, "metadata": {**example["metadata"], "uid": "0" * 32}})
    assert (job.spec.num_workers, job.spec.min_workers, job.spec.max_workers) == (4, 2, 8)
    assert job.workers == 0 and job.spec.worker_demand.gpu == 1


def test_the_crd_serves_scale_and_status() -> None:
    (crd,) = [d for d in _docs() if d["kind"] == "CustomResourceDefinition"]
    sub = crd["spec"]["versions"][0]["subresources"]
    assert sub["status"] == {} and sub["scale"]["specReplicasPath"] == ".spec.workers"


def test_manifests_command_prints_every_file() -> None:
    result = CliRunner().invoke(app, ["k8s", "manifests"])
    assert result.exit_code == 0
    printed = list(yaml.safe_load_all(result.output))
    assert [d["kind"] for d in printed] == [d["kind"] for d in _ordered()]


def _ordered() -> list[dict]:
    names = ("crd.yaml", "rbac.yaml", "fence-policy.yaml", "deployment.yaml", "example-dljob.yaml")
    return [d for n in names for d in yaml.safe_load_all((DEPLOY / n).read_text())]


def test_bad_cli_input_is_one_line_and_exit_2() -> None:
    result = CliRunner().invoke(app, ["k8s", "run", "--scheduler", "nope", "--once"])
    assert result.exit_code == 2
    assert "unknown scheduler 'nope'" in result.output


def test_an_unknown_job_kind_is_one_line_and_exit_2() -> None:
    result = CliRunner().invoke(app, ["k8s", "run", "--kinds", "dljob,tfjob", "--once"])
    assert result.exit_code == 2
    assert "--kinds: unknown tfjob (known: dljob, pytorchjob)" in result.output
