"""Health probes and the start-up time budget of vLLM pods.

Owns how long a pod may take to start before Kubernetes gives up on it, and the probes that
follow. A pod that is still reading hundreds of GB of weights must never be killed for being
slow (probes killing pods during a long model load is a known pain: aibrix#772, vLLM
docs/deployment/k8s.md "KeyboardInterrupt: terminated"), yet a wedged one must not hang forever.

Budget = weight read time (the storage plan's cold-start estimate) + model initialisation margin
(CUDA graphs, torch.compile, NCCL set-up; larger across nodes) + for a Ray leader the time it may
wait for its workers before `vllm serve` even starts.
"""

from __future__ import annotations

import math

from components.vllm_args import API_PORT_NAME

HEALTH_PATH = "/health"
STARTUP_PERIOD_SECONDS = 10
STARTUP_TIMEOUT_SECONDS = 5
SINGLE_NODE_INIT_MARGIN_SECONDS = 300
"""Model initialisation after the weights are read on one node: CUDA graph capture and
torch.compile take one to three minutes on a cold cache; five minutes leaves headroom."""
MULTI_NODE_INIT_MARGIN_SECONDS = 600
"""Across nodes add NCCL communicator set-up over the fabric and per-stage compilation."""
READINESS_PERIOD_SECONDS = 10
READINESS_FAILURE_THRESHOLD = 3
LIVENESS_PERIOD_SECONDS = 30
LIVENESS_TIMEOUT_SECONDS = 10
LIVENESS_FAILURE_THRESHOLD = 5
"""Lenient: 2.5 minutes of consecutive failures (a saturated server answers /health late)."""
PRE_STOP_DRAIN_SECONDS = 15
"""Time for Service endpoints and load balancer targets to drop a terminating pod."""


def startup_budget_seconds(*, cold_start_seconds: float, multi_node: bool, ray_join_seconds: int = 0) -> int:
    """Seconds a pod may take from container start until vLLM answers /health."""
    if cold_start_seconds < 0 or ray_join_seconds < 0:
        raise ValueError("cold start and Ray join times must not be negative")
    margin = MULTI_NODE_INIT_MARGIN_SECONDS if multi_node else SINGLE_NODE_INIT_MARGIN_SECONDS
    return math.ceil(cold_start_seconds) + margin + ray_join_seconds


def startup_failure_threshold(budget_seconds: int) -> int:
    """Probe failures the budget allows at one probe per STARTUP_PERIOD_SECONDS (at least 1)."""
    return max(1, math.ceil(budget_seconds / STARTUP_PERIOD_SECONDS))


def _http_get() -> dict[str, object]:
    return {"path": HEALTH_PATH, "port": API_PORT_NAME, "scheme": "HTTP"}


def startup_probe(budget_seconds: int) -> dict[str, object]:
    """/health every 10 s until the budget is spent; liveness and readiness wait for it."""
    return {
        "httpGet": _http_get(),
        "periodSeconds": STARTUP_PERIOD_SECONDS,
        "timeoutSeconds": STARTUP_TIMEOUT_SECONDS,
        "failureThreshold": startup_failure_threshold(budget_seconds),
    }


def readiness_probe() -> dict[str, object]:
    """Take a replica out of the Service within 30 s when /health fails."""
    return {
        "httpGet": _http_get(),
        "periodSeconds": READINESS_PERIOD_SECONDS,
        "timeoutSeconds": STARTUP_TIMEOUT_SECONDS,
        "failureThreshold": READINESS_FAILURE_THRESHOLD,
    }


def liveness_probe() -> dict[str, object]:
    """Restart only a server whose /health fails for 2.5 minutes (vLLM returns an error once its
    engine died)."""
    return {
        "httpGet": _http_get(),
        "periodSeconds": LIVENESS_PERIOD_SECONDS,
        "timeoutSeconds": LIVENESS_TIMEOUT_SECONDS,
        "failureThreshold": LIVENESS_FAILURE_THRESHOLD,
    }


def pre_stop_drain() -> dict[str, object]:
    """preStop hook: keep serving while endpoints drain, then let SIGTERM stop vLLM."""
    return {"exec": {"command": ["sleep", str(PRE_STOP_DRAIN_SECONDS)]}}
