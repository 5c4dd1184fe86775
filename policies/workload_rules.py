"""In-cluster workload policies: internal Services, pod security, the vLLM API key.

Owns `k8s-service-internal`, `pod-security` and `vllm-api-key-from-secret`. Each checks one
object as the program declares it, so violations stop `pulumi up` before the object is applied.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .k8s import SERVICE, containers, pod_templates
from .pack_config import (
    ALLOWED_CAPABILITIES,
    ALLOWED_HOST_PATHS,
    CONFIG_SCHEMAS,
    K8S_SERVICE_INTERNAL,
    POD_SECURITY,
    VLLM_API_KEY_FROM_SECRET,
    setting,
)
from .props import as_list, as_map, dig, is_true, strings

LB_SCHEME_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-scheme"
LB_INTERNAL_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-internal"
API_KEY_ENV = "VLLM_API_KEY"
API_KEY_FLAG = "--api-key"
_ENV_REFERENCE = re.compile(r"""^["']?(\$\(VLLM_API_KEY\)|\$\{VLLM_API_KEY\}|\$VLLM_API_KEY)["']?$""")


def k8s_service_internal(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Services stay inside the VPC: no NodePort, no externalIPs, only internal load balancers."""
    if args.resource_type != SERVICE:
        return
    spec = as_map(args.props.get("spec"))
    service_type = spec.get("type") or "ClusterIP"
    if service_type == "NodePort":
        report("spec.type is NodePort, which opens a port on every node; use ClusterIP.")
    if external_ips := strings(spec.get("externalIPs")):
        report(f"spec.externalIPs is set ({', '.join(external_ips)}); remove it.")
    if service_type == "LoadBalancer":
        annotations = as_map(dig(args.props, "metadata", "annotations"))
        scheme = annotations.get(LB_SCHEME_ANNOTATION)
        internal = scheme == "internal" or (
            scheme is None and str(annotations.get(LB_INTERNAL_ANNOTATION, "")).lower() == "true"
        )
        if not internal:
            report(
                f"spec.type is LoadBalancer without '{LB_SCHEME_ANNOTATION}: internal' (or "
                f"'{LB_INTERNAL_ANNOTATION}: \"true\"'), so AWS would make it internet-facing."
            )


def _normalise_capability(name: Any) -> str:
    upper = str(name).upper()
    return upper.removeprefix("CAP_")


def _host_path_allowed(path: str, allowed: list[str]) -> bool:
    path = path.rstrip("/") or "/"
    for entry in allowed:
        entry = entry.rstrip("/") or "/"
        if path == entry or path.startswith(entry if entry == "/" else entry + "/"):
            return True
    return False


def pod_security(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No host namespaces, privileged or escalating containers, extra capabilities or host paths."""
    allowed_caps = {_normalise_capability(c) for c in setting(args, POD_SECURITY, ALLOWED_CAPABILITIES)}
    allowed_paths = [str(p) for p in setting(args, POD_SECURITY, ALLOWED_HOST_PATHS)]
    for template in pod_templates(args.resource_type, args.props):
        spec = template.spec
        for field in ("hostNetwork", "hostPID", "hostIPC"):
            if is_true(spec.get(field)):
                report(f"{template.path}: spec.{field} is true; pods must not share the node's namespaces.")
        for where, container in containers(spec):
            context = as_map(container.get("securityContext"))
            if is_true(context.get("privileged")):
                report(f"{template.path}: {where} sets securityContext.privileged: true.")
            if is_true(context.get("allowPrivilegeEscalation")):
                report(f"{template.path}: {where} sets securityContext.allowPrivilegeEscalation: true.")
            added = as_list(dig(context, "capabilities", "add"))
            if extra := sorted({_normalise_capability(c) for c in added} - allowed_caps):
                report(
                    f"{template.path}: {where} adds capabilities {', '.join(extra)}; allowed: "
                    f"{', '.join(sorted(allowed_caps)) or 'none'} (config '{ALLOWED_CAPABILITIES}')."
                )
        for volume in as_list(spec.get("volumes")):
            volume = as_map(volume)
            path = dig(volume, "hostPath", "path")
            if path is not None and not _host_path_allowed(str(path), allowed_paths):
                report(
                    f"{template.path}: volume '{volume.get('name')}' mounts hostPath {path}, which is not "
                    f"in '{ALLOWED_HOST_PATHS}'."
                )


def _words(container: Mapping[str, Any]) -> list[str]:
    """command + args split on whitespace, so `sh -c "vllm serve ... --api-key x"` is seen too."""
    return [
        word
        for part in strings(container.get("command")) + strings(container.get("args"))
        for word in part.split()
    ]


def is_vllm_container(container: Mapping[str, Any]) -> bool:
    """A container running the vLLM image, or a command that starts `vllm serve`."""
    if "vllm" in str(container.get("image") or "").lower():
        return True
    words = _words(container)
    return any(a == "vllm" and b == "serve" for a, b in itertools.pairwise(words))


def _literal_api_keys(words: list[str]) -> list[str]:
    """The `--api-key` values that are literals rather than a reference to $(VLLM_API_KEY)."""
    values = []
    for index, word in enumerate(words):
        if word == API_KEY_FLAG:
            values.append(words[index + 1] if index + 1 < len(words) else "")
        elif word.startswith(API_KEY_FLAG + "="):
            values.append(word.split("=", 1)[1])
    return [v for v in values if not _ENV_REFERENCE.match(v)]


def vllm_api_key_from_secret(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """vLLM containers take VLLM_API_KEY from a Secret, never as a literal."""
    for template in pod_templates(args.resource_type, args.props):
        for where, container in containers(template.spec):
            if not where.startswith("containers[") or not is_vllm_container(container):
                continue
            if _literal_api_keys(_words(container)):
                report(
                    f"{template.path}: {where} passes a literal {API_KEY_FLAG} on its command line; "
                    f"take {API_KEY_ENV} from a Secret instead."
                )
            entries = [
                as_map(e) for e in as_list(container.get("env")) if as_map(e).get("name") == API_KEY_ENV
            ]
            if not entries:
                report(
                    f"{template.path}: {where} has no {API_KEY_ENV} env; without it the OpenAI API "
                    "accepts requests without a key."
                )
            for entry in entries:
                if entry.get("value") is not None:
                    report(f"{template.path}: {where} sets {API_KEY_ENV} as a literal env value.")
                elif dig(entry, "valueFrom", "secretKeyRef") is None:
                    report(
                        f"{template.path}: {where} takes {API_KEY_ENV} from something other than a Secret."
                    )


POLICIES = [
    ResourceValidationPolicy(
        K8S_SERVICE_INTERNAL,
        "Kubernetes Services stay inside the VPC: no NodePort, no externalIPs, LoadBalancers only internal.",
        validate=k8s_service_internal,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
        remediation_steps=f"Use type ClusterIP; for a LoadBalancer add the annotation "
        f"'{LB_SCHEME_ANNOTATION}: internal'; remove spec.externalIPs.",
    ),
    ResourceValidationPolicy(
        POD_SECURITY,
        "Pods don't use host namespaces, privileged or escalating containers, capabilities outside the "
        "allow-list or host paths outside the allow-list.",
        validate=pod_security,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=CONFIG_SCHEMAS[POD_SECURITY],
        severity=Severity.HIGH,
        remediation_steps="Drop hostNetwork/hostPID/hostIPC and privileged; set "
        "allowPrivilegeEscalation: false; add only allowed capabilities (IPC_LOCK for RDMA); reach "
        "devices through device plugins (nvidia.com/gpu, vpc.amazonaws.com/efa), not hostPath.",
    ),
    ResourceValidationPolicy(
        VLLM_API_KEY_FROM_SECRET,
        f"vLLM containers take {API_KEY_ENV} from a Kubernetes Secret (env valueFrom.secretKeyRef), "
        "never as a literal.",
        validate=vllm_api_key_from_secret,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.CRITICAL,
        remediation_steps=f"Add env {API_KEY_ENV} with valueFrom.secretKeyRef (the API-key Secret) to "
        f"every vLLM container and remove literal {API_KEY_FLAG} values from command and args.",
    ),
]
