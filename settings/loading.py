"""Reading settings: plain data or a `pulumi.Config` in, validated `StackSettings` out, or one
`SettingsError` listing every problem with its full key path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from settings.base import SettingsError, key_path
from settings.rules import CROSS_FIELD_RULES
from settings.stack import StackSettings


def _format_pydantic_error(error: Mapping[str, Any]) -> str:
    loc = [part for part in error["loc"] if part not in ("function-after[_cidr_size(), IPv4Network]",)]
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        return f"{key_path(*loc)}: unknown key; check its spelling against Pulumi.yaml's config schema"
    if error["type"] == "missing":
        return f"{key_path(*loc)}: required key is missing"
    value = error.get("input")
    shown = (
        repr(value) if not isinstance(value, dict | list) or len(repr(value)) < 80 else type(value).__name__
    )
    return f"{key_path(*loc)}: {message} (got {shown})"


def parse_settings(raw: Mapping[str, Any]) -> StackSettings:
    """Validate raw config (camelCase keys without the namespace) into StackSettings.

    Raises SettingsError listing every problem, each naming its full key path.
    """
    try:
        settings = StackSettings.model_validate(dict(raw))
    except ValidationError as err:
        raise SettingsError(_format_pydantic_error(e) for e in err.errors()) from None
    problems = [
        f"{key_path(*path)}: {message}" for rule in CROSS_FIELD_RULES for path, message in rule(settings)
    ]
    if problems:
        raise SettingsError(problems)
    return settings


def config_keys() -> list[str]:
    """The top-level (non-secret) config keys, in the order of StackSettings."""
    return [field.alias or to_camel(name) for name, field in StackSettings.model_fields.items()]


def load_settings(config: Any) -> StackSettings:
    """Read every key of the project's namespace from a `pulumi.Config` and validate it."""
    raw: dict[str, Any] = {}
    for key in config_keys():
        try:
            value = config.get_object(key)
        except Exception:  # a structured key holding a non-JSON scalar
            value = config.get(key)
        if value is None:
            value = config.get(key)
        if value is not None:
            raw[key] = value
    return parse_settings(raw)
