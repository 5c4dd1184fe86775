"""Errors raised by the capacity planner.

Every error is a one-line, user-facing message that names the setting at fault, the bad value and
what is allowed. The CLI prints ``str(error)`` and exits 2; the stack settings report it under the
config key that caused it.
"""

from __future__ import annotations


class CapacityError(ValueError):
    """Base class: the inputs cannot be planned as given."""


class UnknownInstanceTypeError(CapacityError):
    """The EC2 instance type is not in the hardware facts."""


class UnknownGpuModelError(CapacityError):
    """The generic GPU model (for an existing cluster) is not in the hardware facts."""


class UnknownModelError(CapacityError):
    """The model is not in the built-in catalog and no facts file was given."""


class PlanError(CapacityError):
    """A plan cannot be made: the model does not fit, a pinned setting is invalid, a target is unreachable."""


def one_of(values: list[str] | list[int]) -> str:
    """Render allowed values as prose: ``1, 2, 4 or 8``."""
    items = [str(v) for v in values]
    if not items:
        return "none"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]
