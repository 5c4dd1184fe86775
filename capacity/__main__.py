"""Command line of the capacity planner: ``python -m capacity estimate | plan | lock``.

Errors print one line on stderr and exit 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import NoReturn

from capacity import report
from capacity.errors import CapacityError
from capacity.hardware import get_gpu_model
from capacity.hub import Fetch, lock_model_facts, urllib_fetch
from capacity.memory import estimate_memory
from capacity.model_facts import ModelFacts, catalog_model_facts, load_model_facts
from capacity.planner import ServingRequest, plan_model
from capacity.storage import STORAGE_KINDS, plan_storage

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _facts(reference: str) -> ModelFacts:
    """A facts file when ``reference`` is a path (or ends in .json), else the catalog entry."""
    if reference.endswith(".json") or Path(reference).is_file():
        return load_model_facts(reference)
    return catalog_model_facts(reference)


def _add_run_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-model-len", type=int, required=True, help="context length per request (tokens)"
    )
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.90, help="vLLM default 0.90")
    parser.add_argument("--dtype", default="auto", help="auto, bfloat16, float16 or float32")
    parser.add_argument("--kv-cache-dtype", default="auto", help="auto or fp8 (fp8_e4m3, fp8_e5m2)")
    parser.add_argument("--quantization", default=None, help="vLLM --quantization (fp8, awq, gptq, ...)")
    parser.add_argument(
        "--max-num-batched-tokens", type=int, default=None, help="default: vLLM's for the GPU"
    )
    parser.add_argument("--vllm-version", default="0.19.0")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m capacity", description="Plan distributed vLLM serving from model facts.")
    commands = parser.add_subparsers(dest="command", required=True)

    estimate = commands.add_parser("estimate", help="predict vLLM's KV cache for one worker layout")
    source = estimate.add_mutually_exclusive_group(required=True)
    source.add_argument("--model-facts", help="facts file (python -m capacity lock)")
    source.add_argument("--model", help="model id of the built-in catalog")
    estimate.add_argument(
        "--gpu-memory-gib", type=float, required=True, help="total GPU memory as torch reports it"
    )
    estimate.add_argument("--gpu-name", default=None, help="GPU name (A100s get smaller vLLM batch defaults)")
    estimate.add_argument("--tensor-parallel-size", type=int, default=1)
    estimate.add_argument("--pipeline-parallel-size", type=int, default=1)
    _add_run_settings(estimate)
    estimate.add_argument("--json", action="store_true", help="print JSON")

    plan = commands.add_parser("plan", help="plan GPUs, layout, replicas, node pool and model store")
    plan.add_argument("model", metavar="MODEL_OR_FACTS_FILE", help="catalog model id or facts file")
    where = plan.add_mutually_exclusive_group(required=True)
    where.add_argument("--instance-type", help="EC2 instance type, e.g. p5.48xlarge")
    where.add_argument(
        "--gpu-model", help="GPU model of an existing cluster, e.g. H100 (with --gpus-per-node)"
    )
    plan.add_argument("--gpus-per-node", type=int, default=None, help="GPUs per node of an existing cluster")
    plan.add_argument(
        "--concurrency", type=int, required=True, help="concurrent requests of max-model-len tokens"
    )
    _add_run_settings(plan)
    plan.add_argument("--tensor-parallel-size", type=int, default=None, help="pin TP (default: planned)")
    plan.add_argument("--pipeline-parallel-size", type=int, default=None, help="pin PP (default: planned)")
    plan.add_argument(
        "--enable-expert-parallel", action="store_true", help="MoE: DP attention + expert parallel"
    )
    plan.add_argument("--min-replicas", type=int, default=None)
    plan.add_argument("--max-replicas", type=int, default=None)
    plan.add_argument("--storage-kind", choices=STORAGE_KINDS, default="fsx-lustre")
    plan.add_argument("--cold-start-target-seconds", type=float, default=600.0)
    plan.add_argument("--json", action="store_true", help="print JSON")

    lock = commands.add_parser("lock", help="write a facts file from the Hugging Face Hub")
    lock.add_argument("model_id", metavar="MODEL_ID")
    lock.add_argument("--revision", default="main", help="branch, tag or commit (the commit is recorded)")
    lock.add_argument("--token-env", default="HF_TOKEN", help="environment variable holding a Hub token")
    lock.add_argument("--out", default=None, help="write here instead of stdout")
    return parser


def _estimate(args: argparse.Namespace) -> str:
    facts = load_model_facts(args.model_facts) if args.model_facts else catalog_model_facts(args.model)
    result = estimate_memory(
        facts,
        gpu_memory_gib=args.gpu_memory_gib,
        tensor_parallel_size=args.tensor_parallel_size,
        pipeline_parallel_size=args.pipeline_parallel_size,
        max_model_len=args.max_model_len,
        gpu_memory_utilization=args.gpu_memory_utilization,
        dtype=args.dtype,
        kv_cache_dtype=args.kv_cache_dtype,
        quantization=args.quantization,
        max_num_batched_tokens=args.max_num_batched_tokens,
        vllm_version=args.vllm_version,
        gpu_name=args.gpu_name,
    )
    if args.json:
        data = {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(result).items()}
        return json.dumps({"model_id": facts.model_id, **data}, indent=2)
    return "\n".join(
        [f"Estimate for {facts.model_id}", "", *report.estimate_lines(result, args.max_model_len)]
    )


def _plan(args: argparse.Namespace) -> str:
    facts = _facts(args.model)
    settings = {
        "max_model_len": args.max_model_len,
        "target_concurrency": args.concurrency,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "dtype": args.dtype,
        "quantization": args.quantization,
        "kv_cache_dtype": args.kv_cache_dtype,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "vllm_version": args.vllm_version,
        "tensor_parallel_size": args.tensor_parallel_size,
        "pipeline_parallel_size": args.pipeline_parallel_size,
        "min_replicas": args.min_replicas,
        "max_replicas": args.max_replicas,
        "enable_expert_parallel": args.enable_expert_parallel,
    }
    if args.instance_type:
        request = ServingRequest.for_instance_type(facts, args.instance_type, **settings)
        label = request.label
    else:
        if args.gpus_per_node is None:
            raise CapacityError("--gpu-model needs --gpus-per-node (GPUs per node of the existing cluster)")
        gpu = get_gpu_model(args.gpu_model)
        label = f"existing {gpu.name} nodes"
        request = ServingRequest(
            facts=facts,
            gpu=gpu,
            gpus_per_node=args.gpus_per_node,
            node_label=label,
            **settings,  # type: ignore[arg-type]
        )
    plan = plan_model(request)
    storage = plan_storage(
        [(plan, plan.max_replicas)],
        kind=args.storage_kind,
        cold_start_target_seconds=args.cold_start_target_seconds,
    )
    if args.json:
        return json.dumps({"model": plan.to_dict(), "storage": storage.to_dict()}, indent=2)
    return report.plan_text(plan, storage, label)


def _lock(args: argparse.Namespace, fetch: Fetch) -> str | None:
    token = os.environ.get(args.token_env) or None
    document = lock_model_facts(args.model_id, revision=args.revision, token=token, fetch=fetch)
    text = json.dumps(document, indent=1) + "\n"
    if args.out is None:
        return text.rstrip("\n")
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as err:
        raise CapacityError(f"cannot write {args.out}: {err.strerror}") from None
    print(f"wrote {args.out} ({args.model_id} at {document['revision']})", file=sys.stderr)
    return None


def main(argv: Sequence[str] | None = None, *, fetch: Fetch = urllib_fetch) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 usage or planning error)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "estimate":
            output = _estimate(args)
        elif args.command == "plan":
            output = _plan(args)
        else:
            output = _lock(args, fetch)
    except CapacityError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    if output is not None:
        try:
            print(output)
        except BrokenPipeError:  # the reader stopped early (`| head`); silence the flush at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
