"""docs/components.md is generated from the component modules and in step with them, and every
component input and output has a description."""

from __future__ import annotations

from pathlib import Path

import component_reference as ref


def test_components_doc_is_up_to_date() -> None:
    assert ref.DOC.read_text() == ref.render(ref.read_components()), "run `python -m component_reference`"


def test_every_input_and_output_is_described() -> None:
    assert ref.undocumented(ref.read_components()) == []


def test_every_component_is_listed_with_its_type_token_and_required_inputs() -> None:
    components = {c.name: c for c in ref.read_components()}
    assert {"GpuCluster", "PrivateNetwork", "VllmService", "LoadBalancerController"} <= set(components)
    cluster = components["GpuCluster"]
    assert cluster.type_token == "vllm-serving:cluster:GpuCluster"
    assert [a.name for a in cluster.inputs if a.default == ref.REQUIRED][:2] == ["name", "settings"]
    assert next(a for a in cluster.inputs if a.name == "log_retention_days").default == "90"


def test_a_missing_description_is_reported(tmp_path: Path) -> None:
    (tmp_path / "thing.py").write_text(
        "import pulumi\n"
        "class ThingArgs:\n"
        "    size: int\n"
        '    """How big."""\n'
        "    color: str = 'red'\n"
        "class Thing(pulumi.ComponentResource):\n"
        "    url: str\n"
        "    def __init__(self, name, args, opts=None):\n"
        "        super().__init__('acme:thing:Thing', name, None, opts)\n"
    )
    (component,) = ref.read_components(tmp_path)
    assert component.type_token == "acme:thing:Thing"
    assert ref.undocumented([component]) == ["Thing.input:color", "Thing.output:url"]
