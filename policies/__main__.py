"""Entry point the Pulumi CLI runs: builds the `vllm-serving-isolation` PolicyPack and serves it.

The CLI starts `python -u -m pulumi.policy <engine> <pack dir>` with the pack directory as cwd,
which `runpy.run_path`s this file as a script: relative imports don't work here and the
directory's own name is not fixed (a published pack is unpacked elsewhere). So this file loads
the directory as a package under a fixed name, and the rule modules import each other relatively,
which also works when tests import `policies.network_rules` from the repository root.
Nothing may be printed: stdout carries the port the pack serves on.
"""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from pulumi_policy import EnforcementLevel, PolicyPack

PACKAGE = "vllm_serving_policies"


def _load_package() -> ModuleType:
    """Import the pack directory as the package `PACKAGE` (its modules import each other relatively)."""
    pack_dir = Path(__file__).resolve().parent
    spec = importlib.util.spec_from_file_location(
        PACKAGE, pack_dir / "__init__.py", submodule_search_locations=[str(pack_dir)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the policy pack package from {pack_dir}")
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)
    return package


_pack = _load_package()
_config = importlib.import_module(f"{PACKAGE}.pack_config")

PolicyPack(
    name=_config.PACK_NAME,
    policies=_pack.POLICIES,
    enforcement_level=EnforcementLevel.MANDATORY,
    initial_config=_config.initial_config(),
)
