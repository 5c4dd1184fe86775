#!/usr/bin/env bash
# Run first by every pod of a multi-node group on EFA. NCCL reaches EFA only through libfabric's
# EFA provider and the aws-ofi-nccl plugin inside the image; without them it silently falls back
# to TCP sockets (`NET/Socket` in the NCCL log) and the group serves at a fraction of the
# bandwidth. The stock vllm/vllm-openai image ships neither: build images/vllm-efa.
#
# Checks: an EFA device is in the pod (vpc.amazonaws.com/efa was allocated), libfabric and an
# NCCL net plugin are on the library path or in the EFA installer's directories.
# Environment: EFA_CHECK=enforce (exit 1 on a problem) or warn (log and go on);
# FABRIC_ROOT prefixes every path (tests).
set -euo pipefail

mode="${EFA_CHECK:-enforce}"
root="${FABRIC_ROOT:-}"
dirs=()
IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
dirs+=(/opt/amazon/efa/lib /opt/amazon/efa/lib64 /opt/amazon/ofi-nccl/lib /opt/amazon/ofi-nccl/lib64
  /opt/aws-ofi-nccl/lib /opt/aws-ofi-nccl/install/lib)

# find_library PATTERN: prints the first file matching PATTERN in the library directories, if any.
find_library() {
  local dir match
  for dir in "${dirs[@]}"; do
    [[ -n "${dir}" ]] || continue
    for match in "${root}${dir}"/$1; do
      if [[ -e "${match}" ]]; then
        echo "${match#"${root}"}"
        return
      fi
    done
  done
}

problems=()
devices=("${root}"/dev/infiniband/uverbs*)
if [[ ! -e "${devices[0]}" ]]; then
  problems+=("no EFA device in the pod (/dev/infiniband/uverbs*): was vpc.amazonaws.com/efa allocated?")
fi
libfabric="$(find_library 'libfabric.so*')"
if [[ -z "${libfabric}" ]]; then
  problems+=("libfabric (EFA provider) is not in the image")
fi
plugin="$(find_library 'libnccl-net*.so')"
if [[ -z "${plugin}" ]]; then
  problems+=("no NCCL net plugin (aws-ofi-nccl, libnccl-net-*.so) in the image")
fi

if (( ${#problems[@]} == 0 )); then
  echo "check-efa: ok: libfabric ${libfabric}, NCCL net plugin ${plugin}, devices ${devices[*]#"${root}"}"
  exit 0
fi
for problem in "${problems[@]}"; do
  echo "check-efa: ${problem}" >&2
done
echo "check-efa: NCCL would fall back to TCP sockets; use an EFA-enabled image (images/vllm-efa)" >&2
if [[ "${mode}" == "warn" ]]; then
  echo "check-efa: serving.efaCheck is warn: starting anyway" >&2
  exit 0
fi
exit 1
