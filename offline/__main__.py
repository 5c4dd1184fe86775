"""Command line of the offline engine: `python -m offline preview|diff ...`.

Exit codes: 0 clean, 1 a mandatory policy violation, 2 invalid settings or stack file.
Errors are one line per problem on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pulumi

from offline import diff as graph_diff
from offline.engine import PROJECT_ROOT, load, plan_only, preview_stack, run_program
from offline.manifests import write_manifests
from offline.report import render
from offline.stack_config import StackConfigError

EXIT_OK, EXIT_POLICY, EXIT_INVALID = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m offline", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    preview = sub.add_parser("preview", help="run the program for one stack and report what it registers")
    preview.add_argument("--stack", default=None, help="stack name: reads Pulumi.<stack>.yaml")
    preview.add_argument("--config", type=Path, default=None, help="any stack file instead of --stack")
    preview.add_argument(
        "--project",
        type=Path,
        default=PROJECT_ROOT,
        help="directory of the Pulumi project to run (default: this one; e.g. examples/consumer)",
    )
    preview.add_argument("--json", action="store_true", help="print one JSON document")
    preview.add_argument(
        "--manifests", type=Path, default=None, help="write every Kubernetes object as YAML here"
    )
    preview.add_argument("--no-policies", action="store_true", help="skip the policy pack")
    preview.add_argument("--policy-config", type=Path, default=None, help="policy pack config JSON")
    outputs = sub.add_parser(
        "outputs",
        help="print a stack's outputs as a StackReference reads them (offline/stack-references file format)",
    )
    outputs.add_argument("--stack", default="dev", help="stack name (default dev)")
    outputs.add_argument(
        "--name",
        default=None,
        help="referenced stack name to record (default organization/<project>/<stack>)",
    )
    diff = sub.add_parser("diff", help="markdown summary of the difference between two previews")
    diff.add_argument("--stack", default="dev", help="stack name (default dev)")
    diff.add_argument("--base-config", type=Path, default=None, help="stack file of the base")
    diff.add_argument("--config", type=Path, default=None, help="stack file of the head")
    diff.add_argument("--base-ref", default=None, help="git ref of the base (previewed in a worktree)")
    return parser


def _preview(args: argparse.Namespace) -> int:
    if args.stack is None and args.config is None:
        args.stack = "dev"
    policy_config = json.loads(args.policy_config.read_text()) if args.policy_config else None
    result = preview_stack(
        args.stack,
        config_file=args.config,
        root=args.project,
        policies=not args.no_policies,
        policy_config=policy_config,
    )
    if args.manifests is not None:
        count = write_manifests(result.graph, args.manifests)
        print(f"wrote {count} manifests to {args.manifests}", file=sys.stderr)
    sys.stdout.write(result.to_json() if args.json else render(result))
    return EXIT_POLICY if result.mandatory_violations else EXIT_OK


def _outputs(args: argparse.Namespace) -> int:
    """Secret outputs stay Pulumi secret envelopes (offline stand-ins: nothing real is revealed)."""
    config = load(args.stack, None)
    plan_only(config)  # invalid settings: exit 2 with the problems, before the program runs
    graph = run_program(config)
    name = args.name or f"organization/{config.project}/{config.stack}"
    sys.stdout.write(json.dumps({"stack": name, "outputs": graph.outputs}, indent=2, sort_keys=True) + "\n")
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    if args.base_ref is not None:
        base = graph_diff.preview_json_at_ref(args.base_ref, args.stack, PROJECT_ROOT)
    else:
        base = json.loads(preview_stack(args.stack, config_file=args.base_config, policies=False).to_json())
    head = json.loads(preview_stack(args.stack, config_file=args.config, policies=False).to_json())
    sys.stdout.write(graph_diff.to_markdown(head["stack"], graph_diff.compare(base, head)))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    from settings import SettingsError

    args = _parser().parse_args(argv)
    try:
        if args.command == "preview":
            return _preview(args)
        if args.command == "outputs":
            return _outputs(args)
        return _diff(args)
    except SettingsError as err:
        for problem in err.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    except (StackConfigError, pulumi.RunError) as err:
        # RunError: the program's own clear message (e.g. a consumer naming a missing output).
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
