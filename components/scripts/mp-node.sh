#!/usr/bin/env bash
# Any pod of a multi-node LeaderWorkerSet group, multiprocessing (mp) backend: run `vllm serve` as
# node LWS_WORKER_INDEX of LWS_GROUP_SIZE with the leader as the rendezvous point. The leader
# (index 0) serves the API; the other nodes run headless. Arguments: everything after
# `vllm serve` (the program builds them).
#
# Two layouts:
# - tensor/pipeline parallel across nodes: --nnodes/--node-rank/--master-addr/--master-port
#   (torch.distributed master on the leader, MP_MASTER_PORT);
# - data parallel across nodes (MoE with expert parallel), when DATA_PARALLEL_SIZE_LOCAL is set:
#   this node runs DATA_PARALLEL_SIZE_LOCAL ranks starting at LWS_WORKER_INDEX times that, and
#   the leader coordinates them on DATA_PARALLEL_RPC_PORT.
#
# Environment: LWS_GROUP_SIZE, LWS_WORKER_INDEX, LWS_LEADER_ADDRESS (all set by LWS),
# MP_MASTER_PORT, DATA_PARALLEL_SIZE_LOCAL and DATA_PARALLEL_RPC_PORT (data parallel only),
# EFA_CHECK (EFA pools: enforce or warn, runs check-efa.sh first).
# LAUNCH_DRY_RUN=1 prints the command instead of running it.
set -euo pipefail

: "${LWS_GROUP_SIZE:?LWS_GROUP_SIZE is not set (not running under a LeaderWorkerSet?)}"
: "${LWS_WORKER_INDEX:?LWS_WORKER_INDEX is not set}"
: "${LWS_LEADER_ADDRESS:?LWS_LEADER_ADDRESS is not set}"
# EFA pools: refuse to start (or warn) when the image cannot use EFA; see check-efa.sh.
if [[ -n "${EFA_CHECK:-}" ]]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/check-efa.sh"
fi

if [[ -n "${DATA_PARALLEL_SIZE_LOCAL:-}" ]]; then
  : "${DATA_PARALLEL_RPC_PORT:?DATA_PARALLEL_RPC_PORT is not set}"
  node_args=(--data-parallel-size-local "${DATA_PARALLEL_SIZE_LOCAL}"
    --data-parallel-start-rank "$(( LWS_WORKER_INDEX * DATA_PARALLEL_SIZE_LOCAL ))"
    --data-parallel-address "${LWS_LEADER_ADDRESS}" --data-parallel-rpc-port "${DATA_PARALLEL_RPC_PORT}")
  rendezvous="${LWS_LEADER_ADDRESS}:${DATA_PARALLEL_RPC_PORT}"
else
  : "${MP_MASTER_PORT:?MP_MASTER_PORT is not set}"
  node_args=(--nnodes "${LWS_GROUP_SIZE}" --node-rank "${LWS_WORKER_INDEX}"
    --master-addr "${LWS_LEADER_ADDRESS}" --master-port "${MP_MASTER_PORT}")
  rendezvous="${LWS_LEADER_ADDRESS}:${MP_MASTER_PORT}"
fi
if (( LWS_WORKER_INDEX > 0 )); then
  node_args+=(--headless)
fi

echo "mp-node: node ${LWS_WORKER_INDEX} of ${LWS_GROUP_SIZE}, rendezvous ${rendezvous}"
if [[ "${LAUNCH_DRY_RUN:-0}" == "1" ]]; then
  echo "+ exec vllm serve $* ${node_args[*]}"
  exit 0
fi
exec vllm serve "$@" "${node_args[@]}"
