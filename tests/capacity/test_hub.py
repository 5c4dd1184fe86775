"""Locking facts from the Hub through an injected fetch function (no network in tests).

Checks the URLs asked for (revision API with blobs, config at the resolved commit), the bearer
token, what the facts document records, and that failures are one-line CapacityErrors.
"""

from __future__ import annotations

import json

import pytest

from capacity import CapacityError
from capacity.hub import lock_model_facts
from capacity.model_facts import facts_from_dict


def test_lock_records_config_counts_sizes_and_the_commit(fake_hub):
    hub = fake_hub
    document = lock_model_facts("meta-llama/Llama-3.1-8B-Instruct", revision="main", token="hf_x", fetch=hub)
    assert [url for url, _ in hub.calls] == [
        "https://huggingface.co/api/models/meta-llama/Llama-3.1-8B-Instruct/revision/main?blobs=true",
        f"https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/{hub.commit}/config.json",
    ]
    assert all(headers["Authorization"] == "Bearer hf_x" for _, headers in hub.calls)
    assert document["revision"] == hub.commit
    assert document["config"] == hub.config
    assert document["safetensors_parameters"] == {"BF16": 8030261248}
    assert document["safetensors_total_size_bytes"] == 16_060_000_000
    facts = facts_from_dict(document, "locked")
    assert (facts.num_layers, facts.safetensors_total_params) == (32, 8030261248)


def test_lock_without_token_sends_no_authorization(fake_hub):
    lock_model_facts("meta-llama/Llama-3.1-8B-Instruct", fetch=fake_hub)
    assert all("Authorization" not in headers for _, headers in fake_hub.calls)


def test_unknown_sizes_stay_null(fake_hub):
    def fetch(url: str, headers) -> bytes:
        if "/api/models/" in url:
            return json.dumps(
                {"sha": fake_hub.commit, "siblings": [{"rfilename": "model.safetensors"}]}
            ).encode()
        return json.dumps(fake_hub.config).encode()

    document = lock_model_facts("acme/model", fetch=fetch)
    assert (document["safetensors_parameters"], document["safetensors_total_size_bytes"]) == (None, None)


def test_hub_failures_and_bad_ids_are_one_line_errors(fake_hub):
    def refuse(url: str, headers) -> bytes:
        raise CapacityError(f"the Hub answered HTTP 401 for {url}; gated models need a token (--token-env)")

    with pytest.raises(CapacityError, match=r"HTTP 401 .*gated models need a token"):
        lock_model_facts("meta-llama/Llama-3.1-8B-Instruct", fetch=refuse)
    with pytest.raises(CapacityError, match=r"model id 'llama' must be a Hub id such as"):
        lock_model_facts("llama", fetch=fake_hub)

    def not_json(url: str, headers) -> bytes:
        return b"<html>"

    with pytest.raises(CapacityError, match=r"the Hub returned something other than JSON"):
        lock_model_facts("acme/model", fetch=not_json)
