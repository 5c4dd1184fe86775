"""The offline engine: run the program for one stack with no cloud and no Pulumi CLI.

Owns the preview pipeline: stack file -> validated settings -> capacity plan -> the program's
recorded resource graph -> the policy pack's verdict over the analyzer protocol. The result is
one `Preview` that the CLI prints as a report, as JSON, or as Kubernetes manifests, and that the
tests assert on. Same stack file, same code -> byte-identical JSON.
"""

from __future__ import annotations

import json
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offline.graph import Violation, is_secret
from offline.recorder import Graph, record_program
from offline.stack_config import StackConfig, load_project_name, load_stack_config

PROJECT_ROOT = Path(__file__).resolve().parent.parent
POLICY_PACK_DIR = PROJECT_ROOT / "policies"
SECRET_MASK = "[secret]"


@dataclass
class Preview:
    """Everything one offline preview produced."""

    stack: str
    project: str
    graph: Graph
    capacity: dict[str, Any]
    violations: list[Violation] = field(default_factory=list)
    policy_pack: str = ""
    policies_run: bool = False

    @property
    def mandatory_violations(self) -> list[Violation]:
        return [v for v in self.violations if v.level == "mandatory"]

    def to_json(self) -> str:
        document = {
            "stack": self.stack,
            "project": self.project,
            "resources": [r.to_dict() for r in self.graph.resources],
            "outputs": self.graph.outputs,
            "capacity": self.capacity,
            "policies": {
                "pack": self.policy_pack,
                "ran": self.policies_run,
                "violations": [v.to_dict() for v in self.violations],
            },
        }
        return json.dumps(mask_secrets(document), indent=2, sort_keys=True) + "\n"


def mask_secrets(value: Any) -> Any:
    """Replace every secret envelope by a mask: previews and PR comments never show secrets."""
    if is_secret(value):
        return SECRET_MASK
    if isinstance(value, dict):
        return {k: mask_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secrets(v) for v in value]
    return value


def stack_file(stack: str, root: Path = PROJECT_ROOT) -> Path:
    return root / f"Pulumi.{stack}.yaml"


def load(stack: str | None, config_file: Path | None, root: Path = PROJECT_ROOT) -> StackConfig:
    project = load_project_name(root)
    if config_file is not None:
        return load_stack_config(config_file, project, stack)
    if stack is None:
        raise ValueError("give a stack name or a config file")
    return load_stack_config(stack_file(stack, root), project, stack)


def plan_only(stack_config: StackConfig, root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """Validate the settings and plan capacity; raises settings.SettingsError on bad input."""
    from planning import plan_stack
    from settings import NAMESPACE, parse_settings

    settings = parse_settings(stack_config.namespace(NAMESPACE))
    return plan_stack(settings, root).to_dict()


def run_program(stack_config: StackConfig, root: Path = PROJECT_ROOT, *, preview: bool = False) -> Graph:
    """Run `__main__.py` under the recording mocks with the stack's config."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))

    def program() -> None:
        runpy.run_path(str(root / "__main__.py"), run_name="__main__")

    return record_program(
        program,
        project=stack_config.project,
        stack=stack_config.stack,
        config=stack_config.config,
        secret_keys=stack_config.secret_keys,
        stack_outputs=referenced_stack_outputs(stack_config, root),
        preview=preview,
    )


def referenced_stack_outputs(stack_config: StackConfig, root: Path) -> dict[str, dict[str, Any]]:
    """Outputs the offline StackReferences return: `offline/stack-references/<name>.json` files.

    Each file holds `{"stack": "<org/project/stack>", "outputs": {...}}`; a stack that reads
    another stack's outputs can be previewed offline against recorded or hand-written values.
    """
    directory = root / "offline" / "stack-references"
    outputs: dict[str, dict[str, Any]] = {}
    if directory.is_dir():
        for path in sorted(directory.glob("*.json")):
            document = json.loads(path.read_text())
            outputs[document["stack"]] = document["outputs"]
    return outputs


def preview_stack(
    stack: str | None = None,
    *,
    config_file: Path | None = None,
    root: Path = PROJECT_ROOT,
    policies: bool = True,
    policy_config: dict[str, Any] | None = None,
) -> Preview:
    """The whole offline preview. Raises settings.SettingsError for invalid settings."""
    stack_config = load(stack, config_file, root)
    capacity = plan_only(stack_config, root)
    graph = run_program(stack_config, root)
    result = Preview(stack=stack_config.stack, project=stack_config.project, graph=graph, capacity=capacity)
    if policies:
        from offline.policy_host import analyze_graph

        verdict = analyze_graph(
            graph.resources,
            pack_dir=POLICY_PACK_DIR,
            project=stack_config.project,
            stack=stack_config.stack,
            config=stack_config.config,
            policy_config=policy_config,
        )
        result.violations = list(verdict.violations)
        result.policy_pack = f"{verdict.pack}@{verdict.version}"
        result.policies_run = True
    return result
