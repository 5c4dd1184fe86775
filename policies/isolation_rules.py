"""`vllm-network-isolation`: vLLM pods talk to their own group, serve clients, and nothing else.

A stack policy, because it relates NetworkPolicies to the workloads they select:
- every namespace running a vLLM workload (Deployment or LeaderWorkerSet whose pod template has
  `app.kubernetes.io/name: vllm`) has a default-deny NetworkPolicy (`podSelector: {}`,
  policyTypes Ingress and Egress, no rules);
- in a NetworkPolicy selecting vLLM pods, an ingress rule opening any port other than the API
  ports and DNS (Ray, NCCL, mp/DP ports) admits only pods of the same group: a plain podSelector
  (same namespace) with the group's `vllm-serving/model` label; an egress rule reaching the
  configured internal ports/ranges obeys the same; ingress to the API ports (including /metrics)
  comes from namespace/pod selectors (or an internal load balancer's private CIDRs), never from
  0.0.0.0/0, ::/0 or "everywhere" (a rule without `from`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .k8s import (
    NETWORK_POLICY,
    VLLM_WORKLOAD_TYPES,
    containers,
    is_empty_selector,
    is_vllm_template,
    namespace_of,
    pod_templates,
    selector_matches,
)
from .pack_config import (
    API_PORTS,
    CONFIG_SCHEMAS,
    DNS_PORT,
    GROUP_LABEL,
    INTERNAL_PORT_RANGES,
    INTERNAL_PORTS,
    PUBLIC_CIDRS,
    VLLM_NETWORK_ISOLATION,
    setting,
)
from .props import as_list, as_map, dig, of_type, port_number, strings


@dataclass(frozen=True)
class VllmPods:
    """The pods one vLLM pod template creates."""

    workload: PolicyResource
    namespace: str
    labels: Mapping[str, Any]
    named_ports: Mapping[str, int]

    @property
    def group(self) -> str | None:
        value = self.labels.get(GROUP_LABEL)
        return str(value) if value else None


@dataclass
class Ports:
    """The ports a NetworkPolicy rule opens."""

    every: bool = False
    spans: list[tuple[int, int]] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    """Named ports that no selected container declares (treated as internal)."""

    def describe(self) -> str:
        if self.every:
            return "all ports"
        words = [str(a) if a == b else f"{a}-{b}" for a, b in self.spans]
        return ", ".join(words + [f"'{name}'" for name in self.unresolved])

    def overlaps(self, ports: set[int], ranges: list[tuple[int, int]]) -> bool:
        if self.every:
            return True
        for start, end in self.spans:
            if any(start <= p <= end for p in ports) or any(start <= b and a <= end for a, b in ranges):
                return True
        return False

    def outside(self, ports: set[int]) -> bool:
        """Whether any opened port is not in `ports`."""
        if self.every or self.unresolved:
            return True
        return any(sum(1 for p in ports if start <= p <= end) < end - start + 1 for start, end in self.spans)


def _vllm_pods(resources: list[PolicyResource]) -> list[VllmPods]:
    found = []
    for workload in of_type(resources, *VLLM_WORKLOAD_TYPES):
        for template in pod_templates(workload.resource_type, workload.props):
            if not is_vllm_template(template):
                continue
            named = {
                str(port.get("name")): number
                for _, container in containers(template.spec)
                for port in map(as_map, as_list(container.get("ports")))
                if port.get("name") and (number := port_number(port.get("containerPort"))) is not None
            }
            found.append(VllmPods(workload, namespace_of(workload), template.labels, named))
    return found


def _ports(rule: Mapping[str, Any], pods: list[VllmPods]) -> Ports:
    entries = [as_map(p) for p in as_list(rule.get("ports"))]
    if not entries or any(e.get("port") is None for e in entries):
        return Ports(every=True)
    ports = Ports()
    for entry in entries:
        number = port_number(entry.get("port"))
        if number is None:
            name = str(entry.get("port"))
            numbers = {p.named_ports[name] for p in pods if name in p.named_ports}
            if len(numbers) != 1:
                ports.unresolved.append(name)
                continue
            number = numbers.pop()
        ports.spans.append((number, port_number(entry.get("endPort")) or number))
    return ports


def _peer_outside_group(peer: Mapping[str, Any], group: str | None) -> str | None:
    """Why a peer is not "pods of the same group in this namespace", or None when it is."""
    if peer.get("ipBlock") is not None:
        return f"ipBlock {dig(peer, 'ipBlock', 'cidr')}"
    if peer.get("namespaceSelector") is not None:
        return "a namespaceSelector"
    selector = as_map(peer.get("podSelector"))
    if group is None or as_map(selector.get("matchLabels")).get(GROUP_LABEL) != group:
        return f"pods not limited to {GROUP_LABEL}={group or '<unset>'}"
    return None


def _is_default_deny(policy: PolicyResource) -> bool:
    spec = as_map(policy.props.get("spec"))
    return (
        is_empty_selector(spec.get("podSelector"))
        and {"Ingress", "Egress"} <= set(strings(spec.get("policyTypes")))
        and not as_list(spec.get("ingress"))
        and not as_list(spec.get("egress"))
    )


def _api_problems(where: str, ports: Ports, peers: list[Mapping[str, Any]]) -> list[str]:
    """An ingress rule reaching the API/metrics port(s) names its sources, never the internet."""
    cidrs = [dig(p, "ipBlock", "cidr") for p in peers if p.get("ipBlock") is not None]
    sources = [f"ipBlock {cidr}" for cidr in cidrs if cidr in PUBLIC_CIDRS]
    return [
        f"{where} admits {source} to the vLLM API/metrics port(s) {ports.describe()}; admit clients "
        "and Prometheus by namespaceSelector/podSelector."
        for source in (sources if peers else ["everywhere"])
    ]


def _internal_problems(
    where: str, ports: Ports, peers: list[Mapping[str, Any]], selected: list[VllmPods]
) -> list[str]:
    """A rule opening internal ports must name only pods of each selected workload's group."""
    problems = []
    for pods in selected:
        reasons = [r for p in peers if (r := _peer_outside_group(p, pods.group))] if peers else ["everywhere"]
        problems += [
            f"{where} opens internal port(s) {ports.describe()} of vLLM workload '{pods.workload.name}' "
            f"to {reason}; Ray/NCCL/mp ports are only for podSelector {GROUP_LABEL}="
            f"{pods.group or '<unset>'} in the same namespace."
            for reason in reasons
        ]
    return problems


def _rule_problems(args: StackValidationArgs, policy: PolicyResource, selected: list[VllmPods]) -> list[str]:
    """Every problem of the ingress and egress rules of a NetworkPolicy selecting vLLM pods."""
    api_ports = {int(p) for p in setting(args, VLLM_NETWORK_ISOLATION, API_PORTS)}
    internal_ports = {int(p) for p in setting(args, VLLM_NETWORK_ISOLATION, INTERNAL_PORTS)}
    internal_ranges = [
        (int(r["start"]), int(r["end"])) for r in setting(args, VLLM_NETWORK_ISOLATION, INTERNAL_PORT_RANGES)
    ]
    spec = as_map(policy.props.get("spec"))
    problems: list[str] = []
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for index, rule in enumerate(map(as_map, as_list(spec.get(direction)))):
            where = f"{direction}[{index}]"
            ports = _ports(rule, selected)
            peers = [as_map(p) for p in as_list(rule.get(peers_key))]
            if direction == "ingress":
                if ports.overlaps(api_ports, []):
                    problems += _api_problems(where, ports, peers)
                internal = ports.outside(api_ports | {DNS_PORT})
            else:
                internal = ports.overlaps(internal_ports, internal_ranges) or bool(ports.unresolved)
            if internal:
                problems += _internal_problems(where, ports, peers, selected)
    return list(dict.fromkeys(problems))


def vllm_network_isolation(args: StackValidationArgs, report: ReportViolation) -> None:
    """Default-deny per vLLM namespace; internal ports only within the group; API never to ipBlocks."""
    vllm_pods = _vllm_pods(args.resources)
    policies = of_type(args.resources, NETWORK_POLICY)
    denied = {namespace_of(p) for p in policies if _is_default_deny(p)}
    reported: set[str] = set()
    for pods in vllm_pods:
        if pods.namespace not in denied and pods.workload.urn not in reported:
            reported.add(pods.workload.urn)
            report(
                f"namespace '{pods.namespace}' runs vLLM workload '{pods.workload.name}' but has no "
                "default-deny NetworkPolicy (podSelector {}, policyTypes [Ingress, Egress], no rules).",
                pods.workload.urn,
            )
    for policy in policies:
        namespace = namespace_of(policy)
        selector = dig(policy.props, "spec", "podSelector")
        selected = [p for p in vllm_pods if p.namespace == namespace and selector_matches(selector, p.labels)]
        if not selected:
            continue
        for problem in _rule_problems(args, policy, selected):
            report(problem, policy.urn)


POLICIES = [
    StackValidationPolicy(
        VLLM_NETWORK_ISOLATION,
        "vLLM namespaces are default-deny; Ray/NCCL/mp ports open only within a serving group; the API "
        "and /metrics port is never open to the internet.",
        validate=vllm_network_isolation,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=CONFIG_SCHEMAS[VLLM_NETWORK_ISOLATION],
        severity=Severity.HIGH,
        remediation_steps="Add a NetworkPolicy with podSelector {} and policyTypes [Ingress, Egress] to "
        f"the namespace; allow internal ports only from/to podSelector {{matchLabels: {{{GROUP_LABEL}: "
        "<model>}}; admit clients and Prometheus to the API port with namespaceSelector/podSelector.",
    ),
]
