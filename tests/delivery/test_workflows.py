"""CI workflows: valid against the GitHub workflow schema (vendored by check-jsonschema, offline),
PRs run the tests and the offline preview of every shipped stack with its diff, and main deploys
dev before prod with prod behind a GitHub Environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.helpers import ROOT, STACKS

WORKFLOWS = ROOT / ".github" / "workflows"


def test_workflows_validate_against_the_github_schema() -> None:
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    assert len(files) == 2
    checker = Path(sys.executable).parent / "check-jsonschema"
    result = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.github-workflows", *files], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_pull_requests_preview_every_stack_offline_and_post_the_diff() -> None:
    workflow = yaml.safe_load((WORKFLOWS / "pull-request.yml").read_text())
    job = workflow["jobs"]["offline-preview"]
    assert sorted(job["strategy"]["matrix"]["stack"]) == sorted(STACKS)
    runs = " ".join(step.get("run", "") for step in job["steps"])
    assert "python -m offline preview --stack ${{ matrix.stack }}" in runs
    assert "python -m offline diff" in runs and "--base-ref" in runs
    assert "make test" in workflow["jobs"]["test"]["steps"][-1]["run"]
    cloud = workflow["jobs"]["cloud-preview"]
    action = next(s for s in cloud["steps"] if s.get("uses", "").startswith("pulumi/actions"))
    assert action["with"]["comment-on-pr"] is True and action["with"]["policyPacks"] == "policies"


def test_main_deploys_dev_before_prod_behind_an_environment() -> None:
    workflow = yaml.safe_load((WORKFLOWS / "deploy.yml").read_text())
    jobs = workflow["jobs"]
    assert jobs["up-prod"]["needs"] == "up-dev"
    assert jobs["up-prod"]["environment"] == "prod"
    assert jobs["up-dev"]["needs"] == "test"
