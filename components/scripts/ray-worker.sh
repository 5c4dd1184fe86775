#!/usr/bin/env bash
# Worker of a multi-node LeaderWorkerSet group, Ray backend: join the leader's Ray head and block.
# The worker runs no HTTP server; the leader schedules vLLM's GPU workers onto it through Ray.
#
# The head may not be up yet when the worker starts, so joining is retried every
# RAY_JOIN_INTERVAL_SECONDS for at most RAY_JOIN_TIMEOUT_SECONDS (logged). When the head goes
# away later, `ray start --block` returns and the container exits, and the LWS restart policy
# RecreateGroupOnPodRestart recreates the whole group.
#
# Environment: LWS_LEADER_ADDRESS (set by LWS), VLLM_HOST_IP, RAY_PORT, RAY_OBJECT_STORE_BYTES,
# RAY_JOIN_TIMEOUT_SECONDS, RAY_JOIN_INTERVAL_SECONDS (default 5), EFA_CHECK (EFA pools: runs
# check-efa.sh first). LAUNCH_DRY_RUN=1 prints the
# command instead of running it.
set -euo pipefail

: "${LWS_LEADER_ADDRESS:?LWS_LEADER_ADDRESS is not set (not running under a LeaderWorkerSet?)}"
: "${VLLM_HOST_IP:?VLLM_HOST_IP is not set}"
: "${RAY_PORT:?RAY_PORT is not set}"
: "${RAY_OBJECT_STORE_BYTES:?RAY_OBJECT_STORE_BYTES is not set}"
: "${RAY_JOIN_TIMEOUT_SECONDS:?RAY_JOIN_TIMEOUT_SECONDS is not set}"
interval="${RAY_JOIN_INTERVAL_SECONDS:-5}"
# EFA pools: refuse to start (or warn) when the image cannot use EFA; see check-efa.sh.
if [[ -n "${EFA_CHECK:-}" ]]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/check-efa.sh"
fi

command=(ray start --address="${LWS_LEADER_ADDRESS}:${RAY_PORT}" --node-ip-address="${VLLM_HOST_IP}"
  --object-store-memory="${RAY_OBJECT_STORE_BYTES}" --disable-usage-stats --block)

if [[ "${LAUNCH_DRY_RUN:-0}" == "1" ]]; then
  echo "+ ${command[*]}"
  exit 0
fi

SECONDS=0
until "${command[@]}"; do
  if (( SECONDS >= RAY_JOIN_TIMEOUT_SECONDS )); then
    echo "ray-worker: could not stay joined to ${LWS_LEADER_ADDRESS}:${RAY_PORT} within" \
      "${RAY_JOIN_TIMEOUT_SECONDS}s; exiting so the group is recreated" >&2
    exit 1
  fi
  echo "ray-worker: Ray head ${LWS_LEADER_ADDRESS}:${RAY_PORT} not reachable yet, retrying" \
    "(${SECONDS}s of ${RAY_JOIN_TIMEOUT_SECONDS}s)"
  sleep "${interval}"
done
echo "ray-worker: Ray stopped after ${SECONDS}s; exiting so the group is recreated" >&2
exit 1
