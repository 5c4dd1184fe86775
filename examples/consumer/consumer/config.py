"""The consumer's own settings (`vllm-serving-consumer:*`): read, checked, and named in errors.

Checked before anything is created; a problem names the key and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

NAMESPACE = "vllm-serving-consumer"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
STACK_NAME = re.compile(r"^([A-Za-z0-9_.-]+/){1,2}[A-Za-z0-9_.-]+$")


class ConsumerConfigError(ValueError):
    """A consumer setting is missing or invalid; the message names the key and the fix."""


@dataclass(frozen=True)
class ConsumerSettings:
    serving_stack: str
    """The vllm-serving stack to call: `<org>/<project>/<stack>`."""
    model: str
    """Key of the serving stack's `endpoints`; "" picks its only model."""
    namespace: str
    """Namespace of the client; the serving stack must list it in clientNamespaces."""
    use_serving_stack_kubeconfig: bool
    """Reach the cluster with the serving stack's kubeconfig output (EKS) or the ambient one."""


def parse_settings(raw: Mapping[str, str | None]) -> ConsumerSettings:
    """Settings from the raw config values (as `pulumi.Config.get` returns them)."""
    stack = (raw.get("servingStack") or "").strip()
    if not stack:
        raise ConsumerConfigError(
            f"{NAMESPACE}:servingStack is required; set it to the serving stack, e.g. "
            f"`pulumi config set {NAMESPACE}:servingStack organization/vllm-serving/dev`"
        )
    if not STACK_NAME.match(stack):
        raise ConsumerConfigError(
            f"{NAMESPACE}:servingStack {stack!r} is not a stack name; use <org>/<project>/<stack>"
        )
    namespace = raw.get("namespace") or "vllm-clients"
    if not DNS_LABEL.match(namespace):
        raise ConsumerConfigError(
            f"{NAMESPACE}:namespace {namespace!r} must be a DNS label (lowercase letters, digits, '-')"
        )
    model = raw.get("model") or ""
    if model and not DNS_LABEL.match(model):
        raise ConsumerConfigError(
            f"{NAMESPACE}:model {model!r} must be a model name of the serving stack (a DNS label)"
        )
    flag = (raw.get("useServingStackKubeconfig") or "true").strip().lower()
    if flag not in ("true", "false"):
        raise ConsumerConfigError(
            f"{NAMESPACE}:useServingStackKubeconfig must be true or false, not {flag!r}"
        )
    return ConsumerSettings(
        serving_stack=stack,
        model=model,
        namespace=namespace,
        use_serving_stack_kubeconfig=flag == "true",
    )
