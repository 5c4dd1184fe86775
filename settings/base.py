"""Shared parts of the settings model: the config namespace, value patterns, the error type
with its key paths, and the base model every section derives from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import (
    BaseModel,
    ConfigDict,
)
from pydantic.alias_generators import to_camel

NAMESPACE = "vllm-serving"

# Secret config keys, read by the program as Pulumi secrets (never into this model tree).
SECRET_KEYS = ("apiKey", "hfToken", "grafanaAdminPassword", "kubeconfig")

DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_MODEL_NAME_LENGTH = 40  # leaves room for "-leader", "-sync-<hash>" suffixes within 63 characters
S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/[^\s]*)?$")
IMAGE_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
EKS_VERSION = re.compile(r"^1\.(2[89]|3[0-9])$")
AWS_AZ = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
OPEN_CIDRS = ("0.0.0.0/0", "::/0")

# vLLM flags a user may add through `extraArgs`. Everything the plan or the component decides
# (parallel sizes, model, port, host, API key) is not here, so it cannot be overridden by accident.
ALLOWED_EXTRA_ARGS = frozenset(
    {
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
        "--max-num-seqs",
        "--enforce-eager",
        "--block-size",
        "--swap-space",
        "--cpu-offload-gb",
        "--tool-call-parser",
        "--enable-auto-tool-choice",
        "--reasoning-parser",
        "--chat-template",
        "--generation-config",
        "--long-prefill-token-threshold",
        "--max-num-partial-prefills",
        "--load-format",
        "--model-loader-extra-config",
        "--speculative-config",
        "--limit-mm-per-prompt",
        "--disable-log-requests",
        "--enable-log-requests",
        "--override-generation-config",
        "--scheduling-policy",
        "--async-scheduling",
    }
)


class SettingsError(Exception):
    """Invalid stack settings: one line per problem, each naming its config key."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def key_path(*parts: str | int) -> str:
    """`("models", 1, "maxModelLen")` -> `vllm-serving:models[1].maxModelLen`."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return f"{NAMESPACE}:{text}"


class SettingsModel(BaseModel):
    """Base: camelCase keys as in the stack file, unknown keys rejected (typos surface)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)
