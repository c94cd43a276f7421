"""deploy/fence-policy.yaml, the lease fence on a real cluster (issue 30).

Its CEL, read from the file and evaluated with cel-python the way the API server runs a
ValidatingAdmissionPolicy (matchConditions, then variables in order, then validations; the first
failing validation's message), admits a write of the controller's service account only from the
pod the Lease names holder, and denies every other case with a message, never an evaluation
error. Its binding names the controller's Lease; its match is exactly the writes RBAC grants the
controller, the Lease's own aside (so, with `test_k8s_rbac`, which checks that every request of a
running controller is granted, every write the controller makes but its Lease's is fenced).
And standing in for the test API server's own fence, the policy stops the leader paused between
its lease check and its send (`test_k8s_fencing`): the controller stands down on its 403.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from dlsched.k8s.controller import Controller
from dlsched.k8s.lease import NotLeading
from tests.k8s.apiserver import CONTROLLER_AGENT, ApiError
from tests.k8s.chaos_server import LEASE
from tests.k8s.k8s_helpers import grants
from tests.k8s.test_k8s_fencing import paused_leader

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
POD_NAME = "authentication.kubernetes.io/pod-name"
ADMISSION = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE"}
"""RBAC verb → the admission operation it arrives as (a PATCH is an UPDATE)."""
OPERATION = {"POST": "CREATE", "PUT": "UPDATE", "PATCH": "UPDATE", "DELETE": "DELETE"}
_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/[^/]+)?/(?P<plural>[^/]+)"
    r"(?:/[^/]+)?(?:/(?P<sub>scale|status|binding))?$"
)
SA = "system:serviceaccount:default:dlsched-controller"
ME = "dlsched-controller-7d9f8c-abcde"


def _doc(file: str, kind: str) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all((DEPLOY / file).read_text()) if d["kind"] == kind]
    return doc


POLICY = _doc("fence-policy.yaml", "ValidatingAdmissionPolicy")
BINDING = _doc("fence-policy.yaml", "ValidatingAdmissionPolicyBinding")


def _run(expression: str, activation: dict[str, Any]) -> Any:
    """The value of a CEL expression; the test fails on an evaluation error."""
    env = celpy.Environment()
    value = env.program(env.compile(expression)).evaluate(activation)
    assert not isinstance(value, celpy.CELEvalError), f"{expression!r}: {value}"
    return value


def _lease(holder: str | None = ME, spec: bool = True) -> dict[str, Any]:
    lease: dict[str, Any] = {"metadata": {"namespace": "default", "name": "dlsched-controller"}}
    if spec:
        lease["spec"] = {"leaseDurationSeconds": 15}
        if holder is not None:
            lease["spec"]["holderIdentity"] = holder
    return lease


def admit(lease: dict[str, Any], extra: dict[str, list[str]] | None, user: str = SA) -> str:
    """``""`` if the policy admits a write by ``user`` with token extras ``extra`` while the
    Lease is ``lease``, else the denial's message."""
    user_info: dict[str, Any] = {"username": user}
    if extra is not None:
        user_info["extra"] = extra
    activation = {
        "request": celpy.json_to_cel({"userInfo": user_info}),
        "params": celpy.json_to_cel(lease),
    }
    spec = POLICY["spec"]
    if not all(_run(c["expression"], activation) for c in spec["matchConditions"]):
        return ""  # not evaluated: admitted as it was
    variables = celpy.celtypes.MapType()
    activation["variables"] = variables
    for variable in spec["variables"]:
        variables[celpy.celtypes.StringType(variable["name"])] = _run(
            variable["expression"], activation
        )
    for validation in spec["validations"]:
        if not _run(validation["expression"], activation):
            if "messageExpression" in validation:
                return str(_run(validation["messageExpression"], activation))
            return str(validation["message"])
    return ""


def test_the_holders_pod_writes() -> None:
    assert admit(_lease(ME), {POD_NAME: [ME]}) == ""


def test_another_pod_than_the_holder_is_denied_and_told_who_holds_it() -> None:
    message = admit(_lease("dlsched-controller-7d9f8c-zzzzz"), {POD_NAME: [ME]})
    assert message == (
        "lease default/dlsched-controller is held by dlsched-controller-7d9f8c-zzzzz, not by pod "
        f"{ME}: a dlsched controller writes only while it leads"
    )


@pytest.mark.parametrize(
    "lease",
    [_lease(""), _lease(None), _lease(spec=False)],
    ids=["released", "no-holder", "no-spec"],
)
def test_a_lease_with_no_holder_is_a_denial(lease: dict[str, Any]) -> None:
    assert "is held by nobody, not by pod " + ME in admit(lease, {POD_NAME: [ME]})


@pytest.mark.parametrize(
    "extra",
    [None, {}, {"authentication.kubernetes.io/credential-id": ["JTI=1"]}, {POD_NAME: []}],
    ids=["no-extra", "empty-extra", "no-pod-name", "empty-pod-name"],
)
def test_credentials_that_name_no_pod_are_a_denial(extra: dict[str, list[str]] | None) -> None:
    assert "credentials name no pod" in admit(_lease(ME), extra)
    assert "credentials name no pod" in admit(_lease(""), extra)  # the first failing validation


@pytest.mark.parametrize(
    "user", ["kubernetes-admin", "system:serviceaccount:other:dlsched-controller", "system:node:n0"]
)
def test_other_users_are_not_evaluated(user: str) -> None:
    assert admit(_lease("someone-else"), None, user=user) == ""


def test_the_binding_names_the_policy_and_the_controllers_lease() -> None:
    spec = BINDING["spec"]
    assert spec["policyName"] == POLICY["metadata"]["name"]
    assert spec["validationActions"] == ["Deny"]
    lease_name = inspect.signature(Controller).parameters["lease_name"].default
    assert spec["paramRef"]["name"] == lease_name
    assert "namespace" not in spec["paramRef"]  # the write's: the controller's --namespace
    assert spec["paramRef"]["parameterNotFoundAction"] == "Allow"  # Deny would stop everyone
    assert POLICY["spec"]["paramKind"] == {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}
    assert POLICY["spec"]["failurePolicy"] == "Fail"
    # 403 is what the controller reads as "re-check the lease" (the default reason is 422)
    assert {v["reason"] for v in POLICY["spec"]["validations"]} == {"Forbidden"}


def test_the_match_is_the_controllers_service_account_and_the_pod_name_its_identity() -> None:
    account = _doc("rbac.yaml", "ServiceAccount")["metadata"]
    assert f"system:serviceaccount:{account['namespace']}:{account['name']}" == SA
    (condition,) = POLICY["spec"]["matchConditions"]
    assert condition["expression"] == f"request.userInfo.username == '{SA}'"
    pod = _doc("deployment.yaml", "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["name"]
    (container,) = pod["containers"]
    args = container["args"]
    assert args[args.index("--identity") + 1] == "$(POD_NAME)"
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env["POD_NAME"] == "metadata.name"


def _fenced() -> set[tuple[str, str, str]]:
    return {
        (group, resource, operation)
        for rule in POLICY["spec"]["matchConstraints"]["resourceRules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for operation in rule["operations"]
    }


def _rbac_writes() -> set[tuple[str, str, str]]:
    writes = set()
    for doc in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()):
        for rule in doc.get("rules", []) if doc["kind"] in ("Role", "ClusterRole") else []:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        if verb in ADMISSION and resource != "leases":
                            writes.add((group, resource, ADMISSION[verb]))
    return writes


def test_the_match_is_exactly_the_writes_rbac_grants_but_the_lease() -> None:
    assert _fenced() == _rbac_writes()
    assert ("", "pods/binding", "CREATE") in _fenced()
    assert ("dlsched.io", "dljobs/scale", "UPDATE") in _fenced()
    assert not any(resource.startswith("leases") for _, resource, _ in _fenced())


def test_the_policy_stops_a_leader_paused_between_its_check_and_its_send() -> None:
    with paused_leader(fenced=False) as (server, first, _, _):

        def policy(method: str, path: str, agent: str) -> None:
            """The test server's fence replaced by the policy: the controller's identity is its
            pod's name, as deploy/deployment.yaml makes it."""
            match = _PATH.match(path.partition("?")[0])
            assert match is not None, path
            resource = match["plural"] + (f"/{match['sub']}" if match["sub"] else "")
            if (match["group"] or "", resource, OPERATION[method]) not in _fenced():
                return
            pod = agent.removeprefix(CONTROLLER_AGENT)
            message = admit(server._objects.get(LEASE) or {}, {POD_NAME: [pod]})
            if message:
                server.tally.writes_refused += 1
                raise ApiError(403, "Forbidden", message)

        server.admit = policy  # type: ignore[method-assign]
        with pytest.raises(NotLeading, match=r"refused \(403 Forbidden\).*held by 'b'"):
            first.reconcile()  # its start of j1 reaches the server after b took over
        tally = server.tally
        assert (tally.writes_refused, tally.writes_past_lease, tally.overcommit) == (1, 0, 0)
        assert grants(server) == {"j0": (2, 0), "j1": (0, 0), "j2": (2, 0)}
        assert tally.writes > 0 and tally.max_writers == 1
