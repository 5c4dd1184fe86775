"""Kubernetes objects of a recorded graph as manifests, checked against the API's schemas.

Owns two functions the offline engine and the tests call for every stack:
- `manifest_from_recorded`: a recorded pulumi-kubernetes resource (wire-form inputs) as the
  kubectl-style manifest it stands for: secrets unwrapped, Pulumi-internal keys dropped, whole
  numbers as integers (the wire carries every number as a double), apiVersion/kind/metadata first;
- `validate_manifest`: every schema problem of one manifest, as readable lines. Built-in kinds
  are checked with the Kubernetes JSON schemas shipped in kubernetes-validate for the target
  version, in strict mode (unknown fields are errors: the API server would drop them silently);
  custom resources with the upstream CRD schemas under `../shared/schemas` (LeaderWorkerSet,
  ScaledObject, TriggerAuthentication, PodMonitor, ServiceMonitor, PrometheusRule). Pod templates
  embedded in a LeaderWorkerSet are checked strictly as PodTemplateSpecs too, because CRD schemas
  accept (and the server prunes) unknown fields. Format checking stays off: Kubernetes formats
  (`int32`, RFC 3339 dates) are not JSON Schema's format vocabulary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

from offline.graph import RecordedResource, unwrap_secrets

DEFAULT_KUBERNETES_VERSION = "1.33"
SCHEMAS_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "schemas"
"""Default location of the shared CRD schemas (<repo>/../shared/schemas)."""
DEFINITIONS_ID = "https://kubernetes.io/api/_definitions.json"
POD_TEMPLATE_REF = f"{DEFINITIONS_ID}#/$defs/io.k8s.api.core.v1.PodTemplateSpec"
MAX_MESSAGE_CHARS = 240

CRD_SCHEMA_FILES: dict[tuple[str, str], str] = {
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): "leaderworkerset.x-k8s.io/v1/leaderworkerset.json",
    ("keda.sh/v1alpha1", "ScaledObject"): "keda.sh/v1alpha1/scaledobject.json",
    ("keda.sh/v1alpha1", "TriggerAuthentication"): "keda.sh/v1alpha1/triggerauthentication.json",
    ("monitoring.coreos.com/v1", "PodMonitor"): "monitoring.coreos.com/v1/podmonitor.json",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com/v1/servicemonitor.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "monitoring.coreos.com/v1/prometheusrule.json",
}
"""(apiVersion, kind) -> schema file under the schemas directory."""
EMBEDDED_POD_TEMPLATES: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): (
        ("spec", "leaderWorkerTemplate", "leaderTemplate"),
        ("spec", "leaderWorkerTemplate", "workerTemplate"),
    ),
}
NOT_MANIFEST_TYPES = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:kustomize/", "pulumi:providers:")
"""Recorded types that are Pulumi constructs around Kubernetes objects, not objects themselves."""


# --------------------------------------------------------------------------- manifests


def is_manifest(resource: RecordedResource) -> bool:
    """Whether a recorded resource is one Kubernetes object (typed resource or custom resource)."""
    return (
        resource.custom
        and resource.type.startswith("kubernetes:")
        and not any(resource.type.startswith(prefix) for prefix in NOT_MANIFEST_TYPES)
    )


def _normalise(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


def manifest_from_recorded(resource: RecordedResource) -> dict[str, Any]:
    """The kubectl-style manifest of a recorded Kubernetes object (raises ValueError otherwise)."""
    if not is_manifest(resource):
        raise ValueError(f"{resource.urn}: a {resource.type} is not a Kubernetes object manifest")
    inputs = _normalise(unwrap_secrets(resource.inputs))
    body = {k: v for k, v in inputs.items() if not k.startswith("__")}
    head = {k: body.pop(k) for k in ("apiVersion", "kind", "metadata") if k in body}
    return {**head, **dict(sorted(body.items()))}


# --------------------------------------------------------------------------- schemas


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


@cache
def _core_schema_dir(kubernetes_version: str, strict: bool) -> Any:
    """The kubernetes-validate schema folder of the newest release not newer than the version."""
    root = resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
    wanted = _version_key(kubernetes_version)[:2]
    versions = sorted(
        (m.group(1) for entry in root.iterdir() if (m := re.match(r"^v([\d.]+)-local$", entry.name))),
        key=_version_key,
    )
    eligible = [v for v in versions if _version_key(v)[:2] <= wanted]
    if not eligible:
        raise ValueError(f"kubernetes-validate has no schemas for Kubernetes {kubernetes_version}")
    return root.joinpath(f"v{eligible[-1]}-local" + ("-strict" if strict else ""))


@cache
def _core_registry(kubernetes_version: str, strict: bool) -> Registry:
    definitions = json.loads(
        _core_schema_dir(kubernetes_version, strict).joinpath("_definitions.json").read_text()
    )
    return Resource.from_contents(definitions) @ Registry()


@cache
def _core_validator(
    kubernetes_version: str, strict: bool, api_version: str, kind: str
) -> jsonschema.protocols.Validator | None:
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = _core_schema_dir(kubernetes_version, strict).joinpath(f"{kind.lower()}-{group_version}.json")
    if not path.is_file():
        return None
    schema = json.loads(path.read_text())
    return jsonschema.Draft202012Validator(schema, registry=_core_registry(kubernetes_version, strict))


@cache
def _pod_template_validator(kubernetes_version: str) -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(
        {"$ref": POD_TEMPLATE_REF}, registry=_core_registry(kubernetes_version, True)
    )


@cache
def _crd_validator(schemas_dir: Path, relative: str) -> jsonschema.protocols.Validator:
    schema = json.loads((schemas_dir / relative).read_text())
    return jsonschema.Draft7Validator(schema)


def _describe(error: jsonschema.ValidationError, prefix: tuple[Any, ...] = ()) -> str:
    parts = [*prefix, *error.absolute_path]
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".") or "(root)"
    message = error.message
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 3] + "..."
    return f"{path}: {message}"


def _errors(
    validator: jsonschema.protocols.Validator, instance: Any, prefix: tuple[Any, ...] = ()
) -> list[str]:
    found = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    return [_describe(error, prefix) for error in found]


def _dig(value: Any, path: Iterable[str]) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def validate_manifest(
    obj: dict[str, Any],
    *,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
    schemas_dir: Path | None = None,
    strict: bool = True,
) -> list[str]:
    """Every schema problem of one manifest, each line naming the object and the field; [] if valid.

    A kind with no known schema is itself a problem (nothing passes unchecked).
    """
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    where = f"{kind or '<no kind>'} {metadata.get('namespace') or '-'}/{metadata.get('name') or '<unnamed>'}"
    if not api_version or not kind:
        return [f"{where}: apiVersion and kind are required"]
    problems: list[str] = []
    crd_file = CRD_SCHEMA_FILES.get((api_version, kind))
    if crd_file is not None:
        problems += _errors(_crd_validator((schemas_dir or SCHEMAS_DIR).resolve(), crd_file), obj)
        for path in EMBEDDED_POD_TEMPLATES.get((api_version, kind), ()):
            template = _dig(obj, path)
            if template is not None:
                problems += _errors(_pod_template_validator(kubernetes_version), template, path)
    else:
        validator = _core_validator(kubernetes_version, strict, api_version, kind)
        if validator is None:
            known = f"Kubernetes {kubernetes_version} or shared CRDs"
            return [f"{where}: no schema for {api_version} {kind} ({known})"]
        problems += _errors(validator, obj)
    return [f"{where}: {problem}" for problem in problems]
