#!/usr/bin/env bash
# Leader of a multi-node LeaderWorkerSet group, Ray backend: start the Ray head, wait until every
# node of the group has joined, then serve. Arguments: everything after `vllm serve` (the program
# builds them, including `--distributed-executor-backend ray`).
#
# The wait is bounded by RAY_JOIN_TIMEOUT_SECONDS and logged; on timeout the container exits,
# and the LWS restart policy RecreateGroupOnPodRestart recreates the whole group.
#
# Environment: LWS_GROUP_SIZE (set by LWS), VLLM_HOST_IP (the pod IP), RAY_PORT,
# RAY_OBJECT_STORE_BYTES, RAY_JOIN_TIMEOUT_SECONDS, RAY_JOIN_INTERVAL_SECONDS (default 5),
# EFA_CHECK (EFA pools: runs check-efa.sh first).
# LAUNCH_DRY_RUN=1 prints the commands instead of running them (for review and tests);
# DRY_RUN_ALIVE_NODES then stands in for the number of Ray nodes alive.
set -euo pipefail

: "${LWS_GROUP_SIZE:?LWS_GROUP_SIZE is not set (not running under a LeaderWorkerSet?)}"
: "${VLLM_HOST_IP:?VLLM_HOST_IP is not set}"
: "${RAY_PORT:?RAY_PORT is not set}"
: "${RAY_OBJECT_STORE_BYTES:?RAY_OBJECT_STORE_BYTES is not set}"
: "${RAY_JOIN_TIMEOUT_SECONDS:?RAY_JOIN_TIMEOUT_SECONDS is not set}"
interval="${RAY_JOIN_INTERVAL_SECONDS:-5}"
dry_run="${LAUNCH_DRY_RUN:-0}"
# EFA pools: refuse to start (or warn) when the image cannot use EFA; see check-efa.sh.
if [[ -n "${EFA_CHECK:-}" ]]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/check-efa.sh"
fi

run() {
  if [[ "${dry_run}" == "1" ]]; then
    echo "+ $*"
  else
    "$@"
  fi
}

alive_nodes() {
  if [[ "${dry_run}" == "1" ]]; then
    echo "${DRY_RUN_ALIVE_NODES:-${LWS_GROUP_SIZE}}"
    return
  fi
  # Only the last line is the count (Ray may log above it); a head still starting counts as 0.
  local count
  count="$(python3 -c 'import ray; ray.init(address="auto", logging_level="ERROR"); print(sum(1 for n in ray.nodes() if n["Alive"]))' 2>/dev/null | tail -n 1)" \
    || count=0
  [[ "${count}" =~ ^[0-9]+$ ]] || count=0
  echo "${count}"
}

run ray start --head --port="${RAY_PORT}" --node-ip-address="${VLLM_HOST_IP}" \
  --object-store-memory="${RAY_OBJECT_STORE_BYTES}" --disable-usage-stats

SECONDS=0
while true; do
  alive="$(alive_nodes)"
  if (( alive >= LWS_GROUP_SIZE )); then
    echo "ray-leader: ${alive}/${LWS_GROUP_SIZE} Ray nodes alive after ${SECONDS}s"
    break
  fi
  if (( SECONDS >= RAY_JOIN_TIMEOUT_SECONDS )); then
    echo "ray-leader: only ${alive}/${LWS_GROUP_SIZE} Ray nodes joined within ${RAY_JOIN_TIMEOUT_SECONDS}s;" \
      "exiting so the group is recreated" >&2
    exit 1
  fi
  echo "ray-leader: ${alive}/${LWS_GROUP_SIZE} Ray nodes alive, waiting (${SECONDS}s of ${RAY_JOIN_TIMEOUT_SECONDS}s)"
  sleep "${interval}"
done

if [[ "${dry_run}" == "1" ]]; then
  echo "+ exec vllm serve $*"
  exit 0
fi
exec vllm serve "$@"
