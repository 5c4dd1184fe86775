"""A policy that checks single resources before they are created AND the whole stack at the end.

Some rules need both views under one name (one config entry, one level): "the EFA group's own
inline rules allow only itself" is decidable on the group alone and should block `pulumi up`
before the group exists, while "some rule resource targets the EFA group" needs the graph.
`pulumi_policy` dispatches `Analyze` to `ResourceValidationPolicy` instances and `AnalyzeStack`
to `StackValidationPolicy` instances (both by `isinstance`), so `TwoPhasePolicy` is a resource
policy registered as a virtual stack policy and routes each call by its argument type.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from pulumi_policy import (
    ReportViolation,
    ResourceValidation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidation,
    StackValidationArgs,
    StackValidationPolicy,
)


class TwoPhasePolicy(ResourceValidationPolicy):
    """A resource validation plus a stack validation reported under one policy name."""

    def __init__(
        self,
        name: str,
        description: str,
        *,
        validate_resource: ResourceValidation,
        validate_stack: StackValidation,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, description, validate=validate_resource, **kwargs)
        self.validate_stack = validate_stack

    def validate(
        self, args: ResourceValidationArgs | StackValidationArgs, report_violation: ReportViolation
    ) -> Awaitable | None:
        if isinstance(args, StackValidationArgs):
            return self.validate_stack(args, report_violation)
        return super().validate(args, report_violation)


StackValidationPolicy.register(TwoPhasePolicy)
