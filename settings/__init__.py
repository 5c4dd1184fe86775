"""Typed stack settings: the one validated object every other part of the program reads.

Owns the pydantic model tree for the `vllm-serving:*` config keys of a `Pulumi.<stack>.yaml`,
the cross-field rules between them, and the formatting of every problem as one line that names
the full key path (`vllm-serving:models[1].maxModelLen`), the bad value and what is allowed.
Nothing here registers resources or talks to a cloud: `parse_settings` takes plain data, and
`load_settings` only reads `pulumi.Config`.

Defaults live here and are mirrored in Pulumi.yaml's config schema (a test keeps them in step).
Secrets (API key, Hugging Face token, Grafana password, kubeconfig) are not part of this tree:
they stay Pulumi secrets and are read by the program with `Config.get_secret` (see SECRET_KEYS).
"""

from settings.base import (
    ALLOWED_EXTRA_ARGS,
    NAMESPACE,
    SECRET_KEYS,
    SettingsError,
    key_path,
)
from settings.infrastructure import (
    CapacityType,
    ClusterSettings,
    ExistingClusterSettings,
    ExistingNetworkSettings,
    GpuPoolSettings,
    Interconnect,
    NetworkSettings,
    SystemNodeGroupSettings,
)
from settings.loading import config_keys, load_settings, parse_settings
from settings.stack import StackSettings
from settings.workloads import (
    AutoscalingSettings,
    ModelSettings,
    ModelStoreSettings,
    MonitoringSettings,
    ServingSettings,
)

__all__ = [
    "ALLOWED_EXTRA_ARGS",
    "NAMESPACE",
    "SECRET_KEYS",
    "AutoscalingSettings",
    "CapacityType",
    "ClusterSettings",
    "ExistingClusterSettings",
    "ExistingNetworkSettings",
    "GpuPoolSettings",
    "Interconnect",
    "ModelSettings",
    "ModelStoreSettings",
    "MonitoringSettings",
    "NetworkSettings",
    "ServingSettings",
    "SettingsError",
    "StackSettings",
    "SystemNodeGroupSettings",
    "config_keys",
    "key_path",
    "load_settings",
    "parse_settings",
]
