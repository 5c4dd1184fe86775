#!/bin/sh
# Calls GET $BASE_URL/models with the API key and fails unless $SERVED_MODEL is listed.
set -eu
: "${BASE_URL:?}" "${SERVED_MODEL:?}" "${VLLM_API_KEY:?}"

# The key travels in a header file, so it never appears in the node's process list.
header_file="${TMPDIR:-/tmp}/authorization"
printf 'Authorization: Bearer %s\n' "$VLLM_API_KEY" >"$header_file"
# Retries while the Service has no ready pod (connection refused, timeouts, 502/503/504), about
# every 15 s for RETRY_MAX_SECONDS; a 401 (wrong key) or 404 fails at once.
max_seconds="${RETRY_MAX_SECONDS:-900}"
delay=15
body=$(curl --fail --silent --show-error \
  --retry "$((max_seconds / delay + 1))" --retry-delay "$delay" --retry-max-time "$max_seconds" \
  --retry-connrefused --connect-timeout 5 --max-time 30 \
  --header "@$header_file" "$BASE_URL/models") || {
  code=$?
  rm -f "$header_file"
  echo "error: GET $BASE_URL/models failed (curl exit $code; 22 is an HTTP error such as 401 for a wrong key)" >&2
  exit "$code"
}
rm -f "$header_file"
printf '%s\n' "$body"

# vLLM answers compact JSON: {"object":"list","data":[{"id":"<served model name>",...}]}
if printf '%s' "$body" | grep -Fq "\"id\":\"$SERVED_MODEL\""; then
  echo "ok: $SERVED_MODEL is served at $BASE_URL"
else
  echo "error: $SERVED_MODEL is not among the models served at $BASE_URL" >&2
  exit 1
fi
