#!/usr/bin/env bash
# Run first by every pod of a multi-node group on EFA. NCCL reaches EFA only through libfabric's
# EFA provider and the aws-ofi-nccl plugin inside the image; without them it silently falls back
# to TCP sockets (`NET/Socket` in the NCCL log) and the group serves over the pod network
# instead of EFA. The stock vllm/vllm-openai image ships neither: build images/vllm-efa.
#
# Checks, following how NCCL opens its net plugin: with NCCL_NET_PLUGIN unset it loads
# libnccl-net.so; otherwise, for each comma-separated entry, the entry as a file name, then
# libnccl-net-<entry>.so ("none" disables plugins). The library must be where the dynamic loader
# looks (LD_LIBRARY_PATH, /etc/ld.so.conf.d, the system directories); the installer's
# libnccl-net-ofi.so is loaded only with NCCL_NET_PLUGIN=ofi. Also: libfabric is there (on that
# path or in /opt/amazon/efa, where the plugin's run path points) and an EFA device is in the pod.
# Environment: EFA_CHECK=enforce (exit 1 on a problem) or warn (log and go on), NCCL_NET_PLUGIN,
# LD_LIBRARY_PATH; FABRIC_ROOT prefixes every path (tests).
set -euo pipefail

mode="${EFA_CHECK:-enforce}"
root="${FABRIC_ROOT:-}"

loader_dirs=()
IFS=: read -r -a loader_dirs <<<"${LD_LIBRARY_PATH:-}"
for conf in "${root}"/etc/ld.so.conf.d/*.conf; do
  [[ -e "${conf}" ]] || continue
  while read -r line; do
    [[ "${line}" == /* ]] && loader_dirs+=("${line}")
  done <"${conf}"
done
loader_dirs+=(/lib /lib64 /usr/lib /usr/lib64 /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu)

# find_in PATTERN DIR...: prints the first file matching PATTERN in the directories, if any.
find_in() {
  local pattern="$1" dir match
  shift
  for dir in "$@"; do
    [[ -n "${dir}" ]] || continue
    for match in "${root}${dir}"/${pattern}; do
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
libfabric="$(find_in 'libfabric.so*' "${loader_dirs[@]}" /opt/amazon/efa/lib /opt/amazon/efa/lib64)"
if [[ -z "${libfabric}" ]]; then
  problems+=("libfabric (EFA provider) is not in the image")
fi

requested="${NCCL_NET_PLUGIN:-}"
plugin=""
if [[ "${requested}" == "none" ]]; then
  problems+=("NCCL_NET_PLUGIN=none turns NCCL's net plugins off")
else
  candidates=(libnccl-net.so)
  if [[ -n "${requested}" ]]; then
    candidates=()
    IFS=, read -r -a entries <<<"${requested}"
    for entry in "${entries[@]}"; do
      candidates+=("${entry}" "libnccl-net-${entry}.so")
    done
  fi
  for candidate in "${candidates[@]}"; do
    if [[ "${candidate}" == /* ]]; then
      [[ -e "${root}${candidate}" ]] && plugin="${candidate}"
    else
      plugin="$(find_in "${candidate}" "${loader_dirs[@]}")"
    fi
    [[ -z "${plugin}" ]] || break
  done
  if [[ -z "${plugin}" ]]; then
    installed="$(find_in 'libnccl-net*.so' "${loader_dirs[@]}" /opt/amazon/ofi-nccl/lib /opt/amazon/ofi-nccl/lib64 \
      /opt/amazon/ofi-nccl/lib/x86_64-linux-gnu /opt/amazon/aws-ofi-nccl/lib)"
    wanted="${candidates[*]}"
    if [[ -n "${installed}" ]]; then
      problems+=("NCCL will not load ${installed}: it looks for ${wanted// / or } on the library path; set NCCL_NET_PLUGIN and LD_LIBRARY_PATH in the image (images/vllm-efa does)")
    else
      problems+=("no NCCL net plugin (aws-ofi-nccl) in the image")
    fi
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
