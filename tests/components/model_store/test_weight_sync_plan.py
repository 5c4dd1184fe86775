"""components/weight_sync_plan.py: which sync Jobs exist and what exactly each one runs.

Checks: the deadline formula (bytes at 100 MB/s, x2 for resumed retries, +30 min) with exact
values, one Job per model sorted by name with duplicate names rejected, the sync command carrying
the pinned revision, target, marker and download patterns, the prepare command, the security
contexts (non-root download, capability-free prepare), the token only from a Secret, and the exact
egress NetworkPolicy (DNS to kube-dns, HTTPS out, no ingress).
"""

from __future__ import annotations

import pytest

from components.weight_sync_plan import (
    SyncModel,
    build_sync_command,
    deadline_seconds,
    decide_sync_node_selector,
    egress_policy_spec,
    plan_sync_jobs,
    pod_labels,
    pod_security_context,
    prepare_container_context,
    restricted_container_context,
    sync_env,
    sync_facts,
)

SHA = "be673f326cab4cd22ccfef76109faf68e41aa5f1"
LLAMA = SyncModel("llama-405b", "meta-llama/Llama-3.1-405B-Instruct", SHA, 811_000_000_000)
QWEN = SyncModel(
    "qwen-32b", "Qwen/Qwen2.5-32B-Instruct", "5ede1c97bbab6ce5cda5812749b4c0bdf79b18dd", 65_500_000_000
)


@pytest.mark.parametrize(
    ("weight_bytes", "expected"),
    [
        (0, 1800),
        (100_000_000, 1802),  # 1 s of transfer, doubled, plus 30 min
        (16_060_000_000, 2122),  # 8B model: 160.6 s -> 322 s + 1800
        (811_000_000_000, 18020),  # 405B: 8110 s -> 16220 s + 1800
    ],
)
def test_deadline_is_twice_the_transfer_at_100_mb_per_s_plus_30_minutes(
    weight_bytes: int, expected: int
) -> None:
    assert deadline_seconds(weight_bytes) == expected


def test_deadline_inputs_come_from_the_data_file() -> None:
    facts = sync_facts()
    assert (facts["downloadRateMBps"], facts["deadlineRetryFactor"], facts["deadlineMarginSeconds"]) == (
        100,
        2,
        1800,
    )
    assert deadline_seconds(1_000_000_000, rate_mbps=1000, retry_factor=1, margin_seconds=0) == 1


def test_deadline_rejects_bad_inputs() -> None:
    with pytest.raises(ValueError, match="weight_bytes must not be negative, got -1"):
        deadline_seconds(-1)
    with pytest.raises(ValueError, match="download rate must be positive, got 0 MB/s"):
        deadline_seconds(1, rate_mbps=0)


def test_one_job_per_model_sorted_by_name() -> None:
    plans = plan_sync_jobs([QWEN, LLAMA], "/models", 1000)
    assert [p.model.name for p in plans] == ["llama-405b", "qwen-32b"]
    assert plans[0].target == f"/models/llama-405b/{SHA}"
    assert plans[0].marker == f"/models/llama-405b/{SHA}/.ready"
    assert plans[0].deadline_seconds == 18020
    assert plans[0].job_name.startswith("llama-405b-sync-")


def test_duplicate_model_names_rejected() -> None:
    with pytest.raises(ValueError, match="models: duplicate model names llama-405b"):
        plan_sync_jobs([LLAMA, LLAMA], "/models", 1000)


def test_sync_command_pins_the_revision() -> None:
    command = build_sync_command(LLAMA, f"/models/llama-405b/{SHA}")
    assert command[:16] == (
        "python3",
        "/opt/weight-sync/sync_weights.py",
        "sync",
        "--model-id",
        "meta-llama/Llama-3.1-405B-Instruct",
        "--revision",
        SHA,
        "--target",
        f"/models/llama-405b/{SHA}",
        "--marker",
        ".ready",
        "--max-workers",
        "16",
        "--requirement",
        "huggingface_hub==1.2.1",
        "--allow-pattern",
    )
    allowed = [command[i + 1] for i, word in enumerate(command) if word == "--allow-pattern"]
    ignored = [command[i + 1] for i, word in enumerate(command) if word == "--ignore-pattern"]
    assert allowed == ["*.safetensors", "*.json", "*.model", "*.tiktoken", "*.txt", "*.jinja"]
    assert "original/*" in ignored and "*.pth" in ignored and "*.bin" in ignored


def test_prepare_command_hands_the_target_to_the_group() -> None:
    (plan,) = plan_sync_jobs([QWEN], "/models", 1000)
    assert plan.prepare_command == (
        "python3",
        "/opt/weight-sync/sync_weights.py",
        "prepare",
        "--target",
        "/models/qwen-32b/5ede1c97bbab6ce5cda5812749b4c0bdf79b18dd",
        "--group",
        "1000",
    )


def test_security_contexts() -> None:
    assert pod_security_context(1000) == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert restricted_container_context() == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }
    prepare = prepare_container_context(1000)
    assert prepare["capabilities"] == {"drop": ["ALL"]}
    assert "add" not in prepare["capabilities"]
    assert (prepare["runAsUser"], prepare["runAsGroup"], prepare["runAsNonRoot"]) == (0, 1000, False)
    assert prepare["allowPrivilegeEscalation"] is False


def test_token_only_from_a_secret() -> None:
    with_token = sync_env(True, "store-sync-hf-token")
    assert with_token[-1] == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "store-sync-hf-token", "key": "HF_TOKEN"}},
    }
    assert all(e["name"] != "HF_TOKEN" for e in sync_env(False, None))
    assert {"name": "HF_HOME", "value": "/tmp/hf-home"} in with_token


def test_labels_select_weight_sync_pods_per_model() -> None:
    assert pod_labels("qwen-32b") == {
        "app.kubernetes.io/name": "weight-sync",
        "app.kubernetes.io/part-of": "vllm-serving",
        "vllm-serving/model": "qwen-32b",
    }


def test_egress_policy_allows_dns_and_https_only() -> None:
    spec = egress_policy_spec()
    assert spec["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "weight-sync"}}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == []
    dns, https = spec["egress"]
    assert dns["ports"] == [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    assert dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    assert https == {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]}


def test_sync_runs_on_the_system_pool_on_eks_and_anywhere_elsewhere() -> None:
    assert decide_sync_node_selector(None, on_eks=True) == {"vllm-serving/pool": "system"}
    assert decide_sync_node_selector(None, on_eks=False) == {}
    assert decide_sync_node_selector({"node-role": "cpu"}, on_eks=True) == {"node-role": "cpu"}
