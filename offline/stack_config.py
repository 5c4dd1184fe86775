"""Read a `Pulumi.<stack>.yaml` the way the Pulumi CLI hands it to a program.

Owns turning a stack file into the flat `namespace:key -> string` config map (structured values as
JSON, as the CLI passes them), the list of secret keys, and the raw settings dict for
`settings.parse_settings`. Encrypted (`secure:`) values cannot be decrypted offline, so they are
replaced by a fixed, clearly marked stand-in and kept secret.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

OFFLINE_SECRET = "offline-stand-in-for-an-encrypted-value"


class StackConfigError(Exception):
    """The stack file cannot be read (missing, not YAML, wrong shape)."""


@dataclass(frozen=True)
class StackConfig:
    project: str
    stack: str
    path: Path
    config: dict[str, str]
    secret_keys: list[str]

    def namespace(self, namespace: str) -> dict[str, Any]:
        """The keys of one namespace with their structured values decoded."""
        prefix = f"{namespace}:"
        raw: dict[str, Any] = {}
        for key, value in self.config.items():
            if key.startswith(prefix):
                try:
                    raw[key[len(prefix) :]] = json.loads(value)
                except json.JSONDecodeError:
                    raw[key[len(prefix) :]] = value
        return raw


def _replace_secure(value: Any) -> tuple[Any, bool]:
    """Replace `{secure: ...}` leaves by the offline stand-in; report whether any was found."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return OFFLINE_SECRET, True
        found = False
        out = {}
        for k, v in value.items():
            out[k], leaf_found = _replace_secure(v)
            found = found or leaf_found
        return out, found
    if isinstance(value, list):
        items = [_replace_secure(v) for v in value]
        return [v for v, _ in items], any(f for _, f in items)
    return value, False


def _to_config_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, sort_keys=True)


def load_project_name(root: Path) -> str:
    project_file = root / "Pulumi.yaml"
    try:
        document = yaml.safe_load(project_file.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise StackConfigError(f"{project_file}: cannot read the project file ({err})") from None
    return str(document["name"])


def load_stack_config(path: Path, project: str, stack: str | None = None) -> StackConfig:
    """Load a stack file; `stack` defaults to the file's `Pulumi.<stack>.yaml` name."""
    if stack is None:
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise StackConfigError(f"{path}: no such stack file") from None
    except yaml.YAMLError as err:
        raise StackConfigError(f"{path}: not valid YAML ({err})") from None
    if not isinstance(document, dict) or not isinstance(document.get("config", {}), dict):
        raise StackConfigError(f"{path}: expected a mapping with a `config:` mapping")
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in sorted((document.get("config") or {}).items()):
        full_key = key if ":" in key else f"{project}:{key}"
        value, is_secret = _replace_secure(value)
        config[full_key] = _to_config_string(value)
        if is_secret:
            secret_keys.append(full_key)
    return StackConfig(project=project, stack=stack, path=path, config=config, secret_keys=secret_keys)
