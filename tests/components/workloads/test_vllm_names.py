"""vllm_names: Kubernetes names of a model's objects are valid, unique, and never collide across models.

Property-based: for any two distinct valid model names, no Service name (API, NLB, and the LWS
headless Service named like the workload) of one equals one of the other; every name is a
DNS-1035 label within 63 characters for model names up to settings.MAX_MODEL_NAME_LENGTH.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.vllm_names import DNS_1035_LABEL, SERVICE_SUFFIXES, vllm_names

MAX_MODEL_NAME_LENGTH = 40  # settings.MAX_MODEL_NAME_LENGTH (settings imports the planner)

model_names = st.from_regex(r"\A[a-z]([-a-z0-9]{0,38}[a-z0-9])?\Z")


def test_names_of_one_model() -> None:
    names = vllm_names("llama-405b")
    assert names.workload == "llama-405b-vllm"
    assert names.api_service == "llama-405b-api"
    assert names.load_balancer == "llama-405b-nlb"
    assert names.scripts == "llama-405b-launch"
    assert len(set(names.all())) == len(names.all())


@given(model_names)
def test_every_name_is_a_dns_label(name: str) -> None:
    assert len(name) <= MAX_MODEL_NAME_LENGTH
    for value in vllm_names(name).all():
        assert DNS_1035_LABEL.match(value) and len(value) <= 63, value


@given(model_names, model_names)
def test_service_names_of_two_models_never_collide(a: str, b: str) -> None:
    if a == b:
        return
    services_a = {vllm_names(a).workload, vllm_names(a).api_service, vllm_names(a).load_balancer}
    services_b = {vllm_names(b).workload, vllm_names(b).api_service, vllm_names(b).load_balancer}
    assert not services_a & services_b


def test_no_service_suffix_ends_another() -> None:
    for x in SERVICE_SUFFIXES:
        for y in SERVICE_SUFFIXES:
            assert x == y or not x.endswith(y)


def test_too_long_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="not a DNS-1035 label"):
        vllm_names("a" * 60)
