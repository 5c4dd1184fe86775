"""Locking model facts from the Hugging Face Hub: config.json and safetensors figures at one revision.

Owns ``lock_model_facts`` (the data behind ``python -m capacity lock``). The Hub API
(``/api/models/{id}/revision/{rev}?blobs=true``) gives the commit, the safetensors parameter
counts by dtype and the file sizes; ``/{id}/resolve/{commit}/config.json`` gives the config at
that commit. Network access goes through a ``fetch`` function so tests inject one; the default
uses urllib with an optional bearer token for gated models.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from capacity.errors import CapacityError
from capacity.model_facts import facts_from_dict

HUB = "https://huggingface.co"
TIMEOUT_SECONDS = 60

Fetch = Callable[[str, Mapping[str, str]], bytes]
"""(url, headers) -> response body; raises CapacityError with a one-line message on failure."""


def urllib_fetch(url: str, headers: Mapping[str, str]) -> bytes:
    """GET ``url`` with urllib."""
    request = urllib.request.Request(url, headers=dict(headers))
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return response.read()
    except urllib.error.HTTPError as err:
        hint = "; gated models need a token (--token-env)" if err.code in (401, 403) else ""
        raise CapacityError(f"the Hub answered HTTP {err.code} for {url}{hint}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        raise CapacityError(f"cannot reach the Hub for {url}: {getattr(err, 'reason', err)}") from None


def _json(fetch: Fetch, url: str, headers: Mapping[str, str]) -> Any:
    body = fetch(url, headers)
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CapacityError(f"the Hub returned something other than JSON for {url}") from None


def lock_model_facts(
    model_id: str, *, revision: str = "main", token: str | None = None, fetch: Fetch = urllib_fetch
) -> dict[str, Any]:
    """A facts document for ``model_id`` pinned to the commit ``revision`` resolves to."""
    if model_id.count("/") != 1 or not all(model_id.split("/")):
        raise CapacityError(
            f"model id {model_id!r} must be a Hub id such as meta-llama/Llama-3.1-8B-Instruct"
        )
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    quoted = urllib.parse.quote(revision, safe="")
    info_url = f"{HUB}/api/models/{model_id}/revision/{quoted}?blobs=true"
    info = _json(fetch, info_url, headers)
    commit = str(info.get("sha") or revision)
    config_url = f"{HUB}/{model_id}/resolve/{commit}/config.json"
    config = _json(fetch, config_url, headers)
    safetensors = info.get("safetensors") or {}
    parameters = safetensors.get("parameters") or None
    sizes = [
        s.get("size")
        for s in info.get("siblings") or []
        if str(s.get("rfilename", "")).endswith(".safetensors")
    ]
    total_size = sum(sizes) if sizes and all(isinstance(s, int) for s in sizes) else None
    document = {
        "model_id": model_id,
        "revision": commit,
        "config": config,
        "safetensors_parameters": parameters,
        "safetensors_total_params": safetensors.get("total"),
        "safetensors_total_size_bytes": total_size,
        "notes": f"locked from the Hugging Face Hub at revision {commit} (requested {revision})",
        "sources": [
            {"what": "config", "source": config_url},
            {"what": "safetensors_parameters, safetensors_total_size_bytes", "source": info_url},
        ],
    }
    facts = facts_from_dict(document, f"{model_id}@{commit}")
    if facts.num_layers < 1:  # also fails now on a config the planner cannot read
        raise CapacityError(f"the config of {model_id}@{commit} has no decoder layers")
    return document
