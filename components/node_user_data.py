"""User data for AL2023 GPU nodes: a MIME multi-part document nodeadm and cloud-init both read.

Owns the rendering of what a GPU node does at boot beyond what EKS injects for a managed node
group with an EKS AMI type (cluster endpoint, CA, labels and taints are merged in by EKS):
- a `NodeConfig` (`application/node.eks.aws`) that RAID-0s the local NVMe instance store for the
  kubelet and containerd, so multi-GiB vLLM image layers land on fast local disk;
- on EFA nodes, a shell part that reserves the 2 MiB huge pages libfabric uses. Cloud-init runs it
  before the kubelet starts (`nodeadm-run.service` is `After=cloud-final.service` in
  awslabs/amazon-eks-ami templates/al2023/runtime/rootfs/etc/systemd/system/), so the node
  registers with `hugepages-2Mi` capacity from its first heartbeat.
Pure: returns text; the component base64-encodes it for the launch template.
"""

from __future__ import annotations

BOUNDARY = "==VLLM-SERVING-NODE=="
HUGEPAGES_SYSCTL_FILE = "/etc/sysctl.d/90-vllm-serving-efa-hugepages.conf"
NODE_CONFIG = """---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: RAID0
"""


def hugepages_script(pages: int) -> str:
    """Shell part that reserves `pages` 2 MiB huge pages now and on every reboot."""
    if pages <= 0:
        raise ValueError(f"huge page count must be positive, got {pages}")
    return f"""#!/bin/bash
# EFA: libfabric registers buffers in 2 MiB huge pages; the EFA driver documents {pages}.
# Written before the kubelet starts so the node advertises hugepages-2Mi capacity.
set -euo pipefail
echo "vm.nr_hugepages = {pages}" > {HUGEPAGES_SYSCTL_FILE}
sysctl --load {HUGEPAGES_SYSCTL_FILE}
"""


def _part(content_type: str, body: str) -> str:
    return f"--{BOUNDARY}\nContent-Type: {content_type}\n\n{body}"


def render_user_data(*, hugepages: int, raid0_local_storage: bool = True) -> str:
    """The MIME multi-part user data, or "" when there is nothing to add to EKS's own bootstrap."""
    parts: list[str] = []
    if raid0_local_storage:
        parts.append(_part("application/node.eks.aws", NODE_CONFIG))
    if hugepages > 0:
        parts.append(_part('text/x-shellscript; charset="us-ascii"', hugepages_script(hugepages)))
    if not parts:
        return ""
    header = f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{BOUNDARY}"\n\n'
    return header + "\n".join(parts) + f"\n--{BOUNDARY}--\n"
