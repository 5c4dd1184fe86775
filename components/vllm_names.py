"""Names of everything one VllmService creates in the cluster.

Owns the physical (Kubernetes) names of a model's objects, derived from the model's name with
fixed suffixes. Services, including the headless Service the LeaderWorkerSet controller creates
under the workload's name, share one namespace-wide name space, so their suffixes are chosen
such that none is a suffix of another: two different models can then never produce the same
Service name, whatever they are called.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME_LENGTH = 63

WORKLOAD_SUFFIX = "-vllm"
"""Deployment / LeaderWorkerSet (and the LWS headless Service, which takes the same name)."""
API_SERVICE_SUFFIX = "-api"
LOAD_BALANCER_SUFFIX = "-nlb"
SERVICE_SUFFIXES = (WORKLOAD_SUFFIX, API_SERVICE_SUFFIX, LOAD_BALANCER_SUFFIX)


@dataclass(frozen=True)
class VllmNames:
    """Kubernetes names of one model's objects."""

    workload: str
    api_service: str
    load_balancer: str
    scripts: str
    disruption_budget: str
    api_policy: str
    group_policy: str
    egress_policy: str

    def all(self) -> list[str]:
        return [getattr(self, f.name) for f in fields(self)]


def vllm_names(model_name: str) -> VllmNames:
    """Names for model `model_name`; raises ValueError if one would not be a valid DNS-1035 label."""
    names = VllmNames(
        workload=f"{model_name}{WORKLOAD_SUFFIX}",
        api_service=f"{model_name}{API_SERVICE_SUFFIX}",
        load_balancer=f"{model_name}{LOAD_BALANCER_SUFFIX}",
        scripts=f"{model_name}-launch",
        disruption_budget=f"{model_name}-disruption",
        api_policy=f"{model_name}-allow-api",
        group_policy=f"{model_name}-allow-group",
        egress_policy=f"{model_name}-allow-egress",
    )
    for name in names.all():
        if len(name) > MAX_NAME_LENGTH or not DNS_1035_LABEL.match(name):
            raise ValueError(
                f"model name {model_name!r} gives the Kubernetes name {name!r}, which is not a DNS-1035 "
                f"label of at most {MAX_NAME_LENGTH} characters"
            )
    return names
