"""The configuration reference, generated from the settings model.

Owns rendering `settings.StackSettings` into (a) the `config:` schema block of Pulumi.yaml and
(b) docs/configuration.md, so both always say what the code accepts. `python -m config_reference`
rewrites both files; a test fails when either is out of date.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from settings import NAMESPACE, SECRET_KEYS, StackSettings

ROOT = Path(__file__).resolve().parent
PROJECT_HEADER = """\
# Generated in part by `python -m config_reference` (the config: block). Edit settings/, then rerun.
name: vllm-serving
description: Distributed vLLM serving on AWS EKS (EFA, FSx for Lustre, LeaderWorkerSet) or an existing cluster.
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: .venv
"""
SECRET_DESCRIPTIONS = {
    "apiKey": "API key clients must send (secret). Unset: one is generated per stack.",
    "hfToken": "Hugging Face token for gated models (secret), used only by the weight-sync jobs.",
    "grafanaAdminPassword": "Grafana admin password (secret). Unset: one is generated per stack.",
    "kubeconfig": "Kubeconfig of an existing cluster (secret), with cluster.existing.useSecretKubeconfig.",
}


def _unwrap_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _type_name(annotation: Any) -> str:
    annotation = _unwrap_optional(annotation)
    origin = get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(str(a) for a in get_args(annotation) if a is not None)
    if origin in (list, tuple):
        return f"list[{_type_name(get_args(annotation)[0])}]"
    if origin is dict:
        return "map[string, string]"
    if origin is typing.Annotated:
        return _type_name(get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object"
    name = getattr(annotation, "__name__", str(annotation))
    return {
        "str": "string",
        "int": "integer",
        "float": "number",
        "bool": "boolean",
        "IPv4Network": "CIDR",
    }.get(name, name)


def _default(field: FieldInfo) -> Any:
    if field.default is not PydanticUndefined:
        value = field.default
    elif field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    else:
        return PydanticUndefined
    if isinstance(value, BaseModel):
        return json.loads(value.model_dump_json(by_alias=True))
    return json.loads(json.dumps(value, default=str))


def _rows(model: type[BaseModel], prefix: str) -> list[tuple[str, str, str, str]]:
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        annotation = _unwrap_optional(field.annotation)
        default = _default(field)
        shown = "required" if default is PydanticUndefined else f"`{json.dumps(default)}`"
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            shown = "see below" if default is not PydanticUndefined else shown
        rows.append(
            (key, _type_name(field.annotation), shown, field.description or (model.__doc__ or "").strip())
        )
        item = get_args(annotation)[0] if get_origin(annotation) is list else annotation
        if isinstance(item, type) and issubclass(item, BaseModel):
            rows += _rows(item, f"{key}[]." if get_origin(annotation) is list else f"{key}.")
    return rows


def render_markdown() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Generated from `settings/` by `python -m config_reference`; a test keeps it in step.",
        f"Every key lives in the `{NAMESPACE}` namespace of `Pulumi.<stack>.yaml`; unknown keys are errors.",
        "",
        "| key | type | default | description |",
        "| --- | --- | --- | --- |",
    ]
    for key, type_name, default, description in _rows(StackSettings, ""):
        # A literal `|` would split the Markdown cell: escape it in the type, slash it in prose.
        type_cell = type_name.replace("|", "\\|")
        lines.append(f"| `{key}` | {type_cell} | {default} | {description.replace('|', '/')} |")
    lines += ["", "## Secrets", "", "Set with `pulumi config set --secret <key> <value>`.", ""]
    lines += ["| key | description |", "| --- | --- |"]
    lines += [f"| `{key}` | {SECRET_DESCRIPTIONS[key]} |" for key in SECRET_KEYS]
    return "\n".join(lines) + "\n"


def render_project_config() -> dict[str, Any]:
    config: dict[str, Any] = {}
    for name, field in StackSettings.model_fields.items():
        key = f"{NAMESPACE}:{field.alias or name}"
        entry: dict[str, Any] = {"description": field.description or ""}
        annotation = _unwrap_optional(field.annotation)
        if get_origin(annotation) is list:
            entry["type"] = "array"
            entry["items"] = {"type": "object"}
        elif annotation is str or get_origin(annotation) is typing.Literal:
            entry["type"] = "string"
        default = _default(field)
        if default is not PydanticUndefined:
            entry["default"] = default
        config[key] = entry
    # Secret keys are optional; a declared key without a default would be required by the CLI,
    # so they are documented in docs/configuration.md instead of declared here.
    return config


def render_project_file() -> str:
    block = yaml.safe_dump({"config": render_project_config()}, sort_keys=False, width=110)
    return PROJECT_HEADER + block


def main() -> int:
    (ROOT / "Pulumi.yaml").write_text(render_project_file())
    (ROOT / "docs" / "configuration.md").write_text(render_markdown())
    print("wrote Pulumi.yaml and docs/configuration.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
