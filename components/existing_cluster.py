"""How the program reaches a cluster it does not create (platform `existing`).

Owns turning `cluster.existing` into the kubeconfig a `kubernetes.Provider` takes: a file path
(passed through; the provider reads it), the output of a cluster stack (StackReference, kept
secret, a missing output fails naming the stack and the key), or the secret config key
`kubeconfig`.
"""

from __future__ import annotations

import pulumi

from settings import ExistingClusterSettings, key_path


def existing_cluster_kubeconfig(
    existing: ExistingClusterSettings, secret_kubeconfig: pulumi.Output[str] | None
) -> pulumi.Input[str]:
    if existing.kubeconfig_path is not None:
        return existing.kubeconfig_path
    if existing.stack is not None:
        reference = pulumi.StackReference("cluster-stack", stack_name=existing.stack)
        stack, key = existing.stack, existing.kubeconfig_output

        def require(value: object) -> str:
            if not isinstance(value, str) or not value:
                raise pulumi.RunError(
                    f"{key_path('cluster', 'existing', 'kubeconfigOutput')}: stack {stack} has no output "
                    f"{key!r} holding a kubeconfig; export it there or set kubeconfigOutput"
                )
            return value

        return pulumi.Output.secret(reference.get_output(key).apply(require))
    if secret_kubeconfig is None:
        raise pulumi.RunError(
            f"{key_path('kubeconfig')}: useSecretKubeconfig is set but the secret is missing; "
            "run `pulumi config set --secret vllm-serving:kubeconfig < kubeconfig.yaml`"
        )
    return secret_kubeconfig
