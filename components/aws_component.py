"""What the AWS components (PrivateNetwork, GpuCluster, GpuNodeGroup) share about their children.

Owns the two conventions every AWS child follows: options that parent it to the component and
carry only its own settings (never the component's opts), and tags made of the stack's extra
tags, a `Name`, and any role tags the policy pack relies on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi


class AwsChildren:
    """Mixin for a ComponentResource whose children are AWS resources; set `_child_tags` first."""

    _child_tags: Mapping[str, str] = {}

    def _opts(self, **kwargs: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, **kwargs)  # self is the ComponentResource

    def _tags(self, name_tag: str, **extra: str) -> dict[str, str]:
        return {**self._child_tags, "Name": name_tag, **extra}
