"""vllm_workload: the decisions behind a VllmService, without Pulumi resources.

Checks validation messages (internal load balancer without CIDRs, EFA without instance facts,
unknown node shape), multi-node data parallel over mp (per-node ranks in the environment), the
Deployment/LWS choice, the image reference with a digest, and the Pulumi timeout rounding.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components.vllm_workload import image_reference, plan_workload, timeout_minutes
from tests.components.workloads.workload_fixtures import env_of, planned, service_args


def args_for(stack: str, model: str, patch: Any = None, **changes: Any) -> Any:
    settings, plan = planned(stack, patch)
    # plan_workload never touches the provider: decisions only, nothing is registered
    return service_args(settings, plan, model, None, **changes)  # type: ignore[arg-type]


def test_kind_follows_nodes_per_replica() -> None:
    assert plan_workload(args_for("prod", "llama-405b")).kind == "LeaderWorkerSet"
    assert plan_workload(args_for("prod", "qwen-32b")).kind == "Deployment"


def test_efa_without_instance_facts_is_refused() -> None:
    with pytest.raises(ValueError, match="pool h100: interconnect efa needs the instance type's facts"):
        plan_workload(args_for("prod", "llama-405b", instance=None))


def test_unknown_node_shape_is_refused() -> None:
    args = args_for("dev", "llama-8b", instance=None)
    with pytest.raises(ValueError, match="pool l40s: gpusPerNode is unknown"):
        plan_workload(args)


def test_multi_node_data_parallel_over_mp_splits_ranks_per_node() -> None:
    args = args_for("prod", "llama-405b")
    dp_plan = replace(
        args.model.plan, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=16
    )
    mp_settings = args.model.settings.model_copy(update={"distributed_backend": "mp"})
    args = replace(args, model=replace(args.model, plan=dp_plan, settings=mp_settings))
    decided = plan_workload(args)
    leader = decided.spec["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    env = env_of(leader)
    assert (env["DATA_PARALLEL_SIZE_LOCAL"], env["DATA_PARALLEL_RPC_PORT"]) == ("8", "29550")
    assert leader["args"][leader["args"].index("--data-parallel-size") + 1] == "16"


def test_uneven_data_parallel_across_nodes_is_refused() -> None:
    args = args_for("prod", "llama-405b")
    bad = replace(args.model.plan, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=12)
    with pytest.raises(ValueError, match="data parallel size 12 does not split evenly over 2 nodes"):
        plan_workload(replace(args, model=replace(args.model, plan=bad)))


def test_image_reference() -> None:
    assert image_reference("vllm/vllm-openai:v0.19.0", None) == "vllm/vllm-openai:v0.19.0"
    digest = "sha256:" + "0" * 64
    assert image_reference("vllm/vllm-openai:v0.19.0", digest) == f"vllm/vllm-openai:v0.19.0@{digest}"


@pytest.mark.parametrize(("seconds", "text"), [(60, "1m"), (61, "2m"), (1716, "29m")])
def test_timeout_minutes_round_up(seconds: int, text: str) -> None:
    assert timeout_minutes(seconds) == text
