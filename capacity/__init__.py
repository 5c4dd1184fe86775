"""Capacity planner of vllm-serving: pure Python, no Pulumi.

Turns vLLM's distributed-serving guidance into decisions: from hardware facts (``hardware``), model
facts (``model_facts``, ``weights``) and the vLLM memory model (``memory``, ``kv_cache``,
``profile``) it predicts the KV cache vLLM will allocate, chooses the parallel layout and replicas
(``parallelism``, ``planner``) and sizes the model store (``storage``). ``python -m capacity``
exposes it on the command line; ``capacity/ACCURACY.md`` records how well it predicts real start-ups.
"""

from capacity.errors import (
    CapacityError,
    PlanError,
    UnknownGpuModelError,
    UnknownInstanceTypeError,
    UnknownModelError,
)
from capacity.hardware import (
    GpuModel,
    InstanceType,
    get_gpu_model,
    get_instance_type,
    gpu_model_names,
    instance_type_names,
)
from capacity.memory import MemoryEstimate, estimate_memory
from capacity.model_facts import (
    ModelFacts,
    catalog_model_facts,
    catalog_model_ids,
    load_model_facts,
    resolve_model_facts,
)
from capacity.planner import ModelPlan, ServingRequest, plan_model
from capacity.storage import StoragePlan, plan_storage

__all__ = [
    "CapacityError",
    "GpuModel",
    "InstanceType",
    "MemoryEstimate",
    "ModelFacts",
    "ModelPlan",
    "PlanError",
    "ServingRequest",
    "StoragePlan",
    "UnknownGpuModelError",
    "UnknownInstanceTypeError",
    "UnknownModelError",
    "catalog_model_facts",
    "catalog_model_ids",
    "estimate_memory",
    "get_gpu_model",
    "get_instance_type",
    "gpu_model_names",
    "instance_type_names",
    "load_model_facts",
    "plan_model",
    "plan_storage",
    "resolve_model_facts",
]
