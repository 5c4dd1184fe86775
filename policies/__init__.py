"""The `vllm-serving-isolation` policy pack: every policy, importable without starting a server.

`POLICIES` lists the pack's policies in a fixed order; `__main__.py` turns them into the running
`PolicyPack` (which serves gRPC as soon as it is constructed). Rule modules hold plain validator
functions `(args, report)` that tests call directly.
"""

from .isolation_rules import POLICIES as _ISOLATION
from .network_rules import POLICIES as _NETWORK
from .stack_rules import POLICIES as _STACK
from .storage_rules import POLICIES as _STORAGE
from .workload_rules import POLICIES as _WORKLOAD

POLICIES = [*_NETWORK, *_WORKLOAD, *_ISOLATION, *_STORAGE, *_STACK]
