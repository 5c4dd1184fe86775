"""The outputs contract: docs/outputs.md, outputs.py and the program's actual outputs agree for
every shipped stack (names, secret or not), and values have the documented shapes."""

from __future__ import annotations

import re

import pytest

from offline.graph import is_secret
from outputs import OUTPUTS
from tests.helpers import ROOT, STACKS, preview, raw_settings

ROW = re.compile(r"^\| `(?P<key>\w+)` \| (?P<type>[^|]+) \| (?P<secret>yes|no) \| (?P<meaning>[^|]+) \|$")


def _documented() -> dict[str, tuple[str, bool]]:
    rows = {}
    for line in (ROOT / "docs" / "outputs.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            rows[match["key"]] = (match["type"].strip(), match["secret"] == "yes")
    return rows


def test_document_matches_the_output_constants() -> None:
    assert _documented() == {o.key: (o.type, o.secret) for o in OUTPUTS}


@pytest.mark.parametrize("stack", STACKS)
def test_program_outputs_match_the_document(stack: str) -> None:
    outputs = preview(stack).graph.outputs
    documented = _documented()
    assert sorted(outputs) == sorted(documented)
    for key, (_, secret) in documented.items():
        assert is_secret(outputs[key]) == secret, f"{stack}: output {key} secret={not secret}"


@pytest.mark.parametrize("stack", STACKS)
def test_endpoints_name_every_model_with_an_in_cluster_url(stack: str) -> None:
    result = preview(stack)
    endpoints = result.graph.outputs["endpoints"]
    assert sorted(endpoints) == sorted(result.capacity["models"])
    for name, endpoint in endpoints.items():
        namespace, service = endpoint["namespace"], endpoint["service"]
        assert service.startswith(name), endpoint
        assert endpoint["baseUrl"] == f"http://{service}.{namespace}.svc.cluster.local:8000/v1"
        assert endpoint["servedModelName"]


@pytest.mark.parametrize("stack", STACKS)
def test_client_namespaces_are_the_ones_the_network_policies_admit(stack: str) -> None:
    graph = preview(stack).graph
    monitoring = raw_settings(stack).get("monitoring", {}).get("namespace", "monitoring")
    admitted_per_model = []
    for policy in graph.by_type("kubernetes:networking.k8s.io/v1:NetworkPolicy"):
        if not policy.name.endswith("allow-api"):
            continue
        peers = policy.inputs["spec"]["ingress"][0]["from"]
        names = {
            name
            for peer in peers
            for expression in peer.get("namespaceSelector", {}).get("matchExpressions", [])
            for name in expression["values"]
        }
        admitted_per_model.append(sorted(names - {monitoring}))
    assert admitted_per_model, "every stack has allow-api NetworkPolicies"
    assert all(admitted == graph.outputs["clientNamespaces"] for admitted in admitted_per_model)
    configured = raw_settings(stack).get("serving", {}).get("clientNamespaces", [])
    assert graph.outputs["clientNamespaces"] == sorted(configured)
