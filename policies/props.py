"""Reading resource properties as the pack receives them.

Owns the small helpers every rule uses on wire-form properties (camelCase names). The SDK hands
validators proxies (`Mapping`/`Sequence`, not `dict`/`list`) that raise `UnknownValueError` when a
value is not known yet (preview). Rules let that error propagate (the SDK then reports "can't run
policy ... during preview" as advisory) except where an identity can be resolved another way:
`known` and `refers_to` fall back to the engine's property dependencies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError


def as_list(value: Any) -> list[Any]:
    """The elements of a list value; [] for a missing or non-list value."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    return []


def as_map(value: Any) -> Mapping[str, Any]:
    """A mapping value; {} for a missing or non-mapping value."""
    return value if isinstance(value, Mapping) else {}


def dig(value: Any, *keys: str) -> Any:
    """The value at a nested path of mappings, or None when any step is missing."""
    for key in keys:
        value = as_map(value).get(key)
        if value is None:
            return None
    return value


def is_true(value: Any) -> bool:
    """True for a boolean true or its string form ("true"; some AWS fields are strings)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def strings(value: Any) -> list[str]:
    """The non-empty strings of a list value (a single string counts as a one-element list)."""
    if isinstance(value, str):
        return [value] if value else []
    return [item for item in as_list(value) if isinstance(item, str) and item]


def tag(props: Mapping[str, Any], key: str) -> Any:
    """An AWS tag value from `tags` (inputs) or `tagsAll` (outputs)."""
    for field in ("tags", "tagsAll"):
        value = known(lambda field=field: as_map(props.get(field)).get(key))
        if value is not None:
            return value
    return None


def known(read: Callable[[], Any]) -> Any:
    """`read()`, or None when it touches a value that is unknown during preview."""
    try:
        return read()
    except UnknownValueError:
        return None


def known_items(value: Any) -> list[Any]:
    """The elements of a list with each unknown element replaced by None."""
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        return []
    return [known(lambda i=i: value[i]) for i in range(len(value))]


def resource_id(resource: PolicyResource) -> Any:
    """The resource's physical id from its outputs, or None when unknown or absent."""
    return known(lambda: resource.props.get("id"))


def refers_to(resource: PolicyResource, prop: str, target: PolicyResource) -> bool:
    """Whether `resource.props[prop]` comes from `target`.

    True when the engine recorded `target` as a dependency of that property, or when the value
    (or an element of a list value) equals the target's id. The first covers previews, where ids
    are still unknown; the second covers ids passed as plain strings.
    """
    if any(dep is target for dep in resource.property_dependencies.get(prop, [])):
        return True
    target_id = resource_id(target)
    if target_id is None:
        return False
    value = known(lambda: resource.props.get(prop))
    if isinstance(value, str):
        return value == target_id
    return target_id in known_items(value)


def of_type(resources: Iterable[PolicyResource], *types: str) -> list[PolicyResource]:
    """The resources of the given types, in the order the engine sent them."""
    return [r for r in resources if r.resource_type in types]


def port_number(value: Any) -> int | None:
    """A port given as a number (JSON numbers arrive as floats) or numeric string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and float(value).is_integer():
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None
