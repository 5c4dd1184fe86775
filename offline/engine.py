"""The offline engine: run the program for one stack with no cloud and no Pulumi CLI.

Owns the preview pipeline: stack file -> validated settings -> capacity plan -> the program's
recorded resource graph -> the policy pack's verdict over the analyzer protocol. The result is
one `Preview` that the CLI prints as a report, as JSON, or as Kubernetes manifests, and that the
tests assert on. Same stack file, same code -> byte-identical JSON.

Also owns what StackReferences return offline: `offline/stack-references/*.json` files of the
previewed project, else, for a reference to a stack of this project (`<org>/vllm-serving/<stack>`
with a `Pulumi.<stack>.yaml` here), that stack's own offline outputs. So a project that consumes
this one (examples/consumer) is previewed against exactly what this project would export.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offline.graph import Violation, is_secret
from offline.recorder import Graph, record_program
from offline.stack_config import StackConfig, StackConfigError, load_project_name, load_stack_config

PROJECT_ROOT = Path(__file__).resolve().parent.parent
POLICY_PACK_DIR = PROJECT_ROOT / "policies"
SECRET_MASK = "[secret]"
# The chain of this project's stacks being run to answer StackReferences (cycle detection).
RESOLVING_ENV = "VLLM_SERVING_OFFLINE_RESOLVING"


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


class ReferencedStacks(Mapping[str, Mapping[str, Any]]):
    """The outputs offline StackReferences return, looked up when the program reads them.

    First the project's `offline/stack-references/*.json` files; then, for a stack of this
    project, the outputs of its own offline run, made in a child process (`python -m offline
    outputs`) because the running program owns this process's Pulumi runtime. A failed child run
    is kept in `errors` and the reference reads no outputs; the engine reports the error.
    """

    def __init__(self, files: Mapping[str, Mapping[str, Any]], resolving: str = "") -> None:
        self._known = dict(files)
        self._resolving = resolving
        self.errors: list[str] = []

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        if name not in self._known:
            stack = local_stack_of(name)
            if stack is None:
                raise KeyError(name)
            self._known[name] = self._run_local(stack)
        return self._known[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._known)

    def __len__(self) -> int:
        return len(self._known)

    def _run_local(self, stack: str) -> dict[str, Any]:
        chain = [s for s in self._resolving.split(",") if s]
        if stack in chain:
            self.errors.append(f"stack reference cycle: {' -> '.join([*chain, stack])}")
            return {}
        done = subprocess.run(
            [sys.executable, "-m", "offline", "outputs", "--stack", stack],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, RESOLVING_ENV: ",".join([*chain, stack])},
            check=False,
        )
        if done.returncode != 0:
            reason = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            self.errors.append(f"offline run of referenced stack {stack} failed: {reason[0]}")
            return {}
        return dict(json.loads(done.stdout)["outputs"])


def run_program(stack_config: StackConfig, root: Path = PROJECT_ROOT, *, preview: bool = False) -> Graph:
    """Run `<root>/__main__.py` under the recording mocks with the stack's config."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))

    def program() -> None:
        runpy.run_path(str(root / "__main__.py"), run_name="__main__")

    references = ReferencedStacks(stack_reference_files(root), os.environ.get(RESOLVING_ENV, ""))
    try:
        return record_program(
            program,
            project=stack_config.project,
            stack=stack_config.stack,
            config=stack_config.config,
            secret_keys=stack_config.secret_keys,
            stack_outputs=references,
            preview=preview,
        )
    finally:
        # A referenced stack that could not be run explains whatever failed after it.
        if references.errors:
            raise StackConfigError("; ".join(references.errors))


def local_stack_of(reference: str) -> str | None:
    """`<org>/vllm-serving/<stack>` or `vllm-serving/<stack>` -> `<stack>` when this project has
    `Pulumi.<stack>.yaml`; None for any other name."""
    parts = reference.split("/")
    if len(parts) not in (2, 3):
        return None
    project, stack = parts[-2], parts[-1]
    if project != load_project_name(PROJECT_ROOT) or not stack_file(stack).is_file():
        return None
    return stack


def stack_reference_files(root: Path) -> dict[str, dict[str, Any]]:
    """Outputs the offline StackReferences return: `<root>/offline/stack-references/*.json` files.

    Each file holds `{"stack": "<org/project/stack>", "outputs": {...}}` (what `python -m offline
    outputs` prints); secret outputs are Pulumi secret envelopes, as in a recorded graph.
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
    """The whole offline preview. Raises settings.SettingsError for invalid settings.

    `root` may be another project's directory (e.g. examples/consumer): it is run the same way,
    with the same policy pack, but only this project has settings to plan capacity from.
    """
    root = root.resolve()
    stack_config = load(stack, config_file, root)
    capacity = plan_only(stack_config, root) if root == PROJECT_ROOT else {}
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
