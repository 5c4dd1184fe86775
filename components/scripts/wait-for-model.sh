#!/usr/bin/env bash
# Init container of every vLLM pod: wait until the weight-sync job has marked the model complete.
#
# The model volume is mounted read-only; the sync job writes ${MODEL_PATH}/${READY_MARKER} after
# the last file of the pinned revision is in place, so vLLM never starts on a partial download.
# Bounded: after WAIT_TIMEOUT_SECONDS the container fails with a message saying what is missing,
# and the kubelet retries it with back-off (visible as Init:CrashLoopBackOff, never a silent hang).
#
# Environment: MODEL_PATH, READY_MARKER, WAIT_TIMEOUT_SECONDS, WAIT_INTERVAL_SECONDS (default 10).
set -euo pipefail

: "${MODEL_PATH:?MODEL_PATH is not set}"
: "${READY_MARKER:?READY_MARKER is not set}"
: "${WAIT_TIMEOUT_SECONDS:?WAIT_TIMEOUT_SECONDS is not set}"
interval="${WAIT_INTERVAL_SECONDS:-10}"
marker="${MODEL_PATH}/${READY_MARKER}"

SECONDS=0
until [[ -f "${marker}" ]]; do
  if (( SECONDS >= WAIT_TIMEOUT_SECONDS )); then
    echo "wait-for-model: ${marker} is still missing after ${SECONDS}s (timeout ${WAIT_TIMEOUT_SECONDS}s);" \
      "check the weight-sync job of this model" >&2
    exit 1
  fi
  echo "wait-for-model: waiting for ${marker} (${SECONDS}s of ${WAIT_TIMEOUT_SECONDS}s)"
  sleep "${interval}"
done
echo "wait-for-model: ${marker} found after ${SECONDS}s"
