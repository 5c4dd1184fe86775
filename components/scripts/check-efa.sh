#!/usr/bin/env bash
# Run first by every pod of a multi-node group on EFA. NCCL reaches EFA only through libfabric's
# EFA provider and the aws-ofi-nccl plugin inside the image; without them it silently falls back
# to TCP sockets (`NET/Socket` in the NCCL log) and the group serves over the pod network
# instead of EFA. The stock vllm/vllm-openai image ships neither: build images/vllm-efa.
#
# Checks: an EFA device is in the pod (vpc.amazonaws.com/efa was allocated), libfabric is on the
# library path or in the EFA installer's directories, and so is an NCCL net plugin under a name
# NCCL loads: libnccl-net.so, libnccl-net-aws-ofi.so (NCCL 2.29+), or the one NCCL_NET_PLUGIN
# names. The installer's libnccl-net-ofi.so alone is not loaded without NCCL_NET_PLUGIN=ofi.
# Environment: EFA_CHECK=enforce (exit 1 on a problem) or warn (log and go on), NCCL_NET_PLUGIN;
# FABRIC_ROOT prefixes every path (tests).
set -euo pipefail

mode="${EFA_CHECK:-enforce}"
root="${FABRIC_ROOT:-}"
dirs=()
IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
dirs+=(/opt/amazon/efa/lib /opt/amazon/efa/lib64 /opt/amazon/ofi-nccl/lib /opt/amazon/ofi-nccl/lib64
  /opt/amazon/ofi-nccl/lib/x86_64-linux-gnu /opt/aws-ofi-nccl/lib /opt/aws-ofi-nccl/install/lib)

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
requested="${NCCL_NET_PLUGIN:-}"
if [[ "${requested}" == /* ]]; then
  plugin=""
  [[ -e "${root}${requested}" ]] && plugin="${requested}"
elif [[ -n "${requested}" ]]; then
  plugin="$(find_library "libnccl-net-${requested}.so")"
else
  plugin="$(find_library 'libnccl-net-aws-ofi.so')"
  [[ -n "${plugin}" ]] || plugin="$(find_library 'libnccl-net.so')"
fi
if [[ -z "${plugin}" ]]; then
  unloaded="$(find_library 'libnccl-net-ofi.so')"
  if [[ -z "${requested}" && -n "${unloaded}" ]]; then
    problems+=("${unloaded} is there but NCCL does not load that name: link it as libnccl-net-aws-ofi.so (images/vllm-efa does) or set NCCL_NET_PLUGIN=ofi in the image")
  else
    problems+=("no NCCL net plugin (aws-ofi-nccl${requested:+, NCCL_NET_PLUGIN=${requested}}) in the image")
  fi
fi

if (( ${#problems[@]} == 0 )); then
  echo "check-efa: ok: libfabric ${libfabric}, NCCL net plugin ${plugin}, devices ${devices[*]#"${root}"}"
  exit 0
fi
for problem in "${problems[@]}"; do
  echo "check-efa: ${problem}" >&2
done
echo "check-efa: NCCL would fall back to TCP sockets; set vllm-serving:serving.image to an EFA-enabled image (images/vllm-efa), or vllm-serving:serving.efaCheck to warn to start anyway" >&2
if [[ "${mode}" == "warn" ]]; then
  echo "check-efa: vllm-serving:serving.efaCheck is warn: starting anyway" >&2
  exit 0
fi
exit 1
