#!/bin/sh
# Calls GET $BASE_URL/models with the API key and fails unless $SERVED_MODEL is listed.
# Retries while the server starts: it refuses connections or answers 503 until weights are loaded.
set -eu
: "${BASE_URL:?}" "${SERVED_MODEL:?}" "${VLLM_API_KEY:?}"

# The key travels in a header file, so it never appears in the node's process list.
header_file="${TMPDIR:-/tmp}/authorization"
printf 'Authorization: Bearer %s\n' "$VLLM_API_KEY" >"$header_file"
body=$(curl --fail --silent --show-error \
  --retry "${RETRIES:-40}" --retry-delay 15 --retry-max-time "${RETRY_MAX_SECONDS:-900}" \
  --retry-all-errors --connect-timeout 5 --max-time 30 \
  --header "@$header_file" "$BASE_URL/models")
rm -f "$header_file"
printf '%s\n' "$body"

# vLLM answers compact JSON: {"object":"list","data":[{"id":"<served model name>",...}]}
if printf '%s' "$body" | grep -Fq "\"id\":\"$SERVED_MODEL\""; then
  echo "ok: $SERVED_MODEL is served at $BASE_URL"
else
  echo "error: $SERVED_MODEL is not among the models served at $BASE_URL" >&2
  exit 1
fi
