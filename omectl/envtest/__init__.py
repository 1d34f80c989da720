"""A real control plane beside the embedded one: etcd and kube-apiserver as local processes (envtest's way).

- `binaries`: where `make envtest` cached the pinned kube-apiserver and etcd (`find_binaries`), or why not;
- `controlplane`: `RealAPIServer`, one cluster's two processes, certificates, tokens and readiness;
- `fleet`: `RealFleet`, N clusters with one kubeconfig and manifests applied (the surface of `EmbeddedFleet`);
- `simulator`: `RemoteSimulator`, the embedded server's workload simulator run as an API client.

Test infrastructure and `omectl dev up --real`; the product never needs it.
"""

from omectl.envtest.binaries import BinariesMissing, EnvtestBinaries, find_binaries
from omectl.envtest.controlplane import ControlPlaneError, RealAPIServer
from omectl.envtest.fleet import RealFleet

__all__ = ["BinariesMissing", "ControlPlaneError", "EnvtestBinaries", "RealAPIServer", "RealFleet", "find_binaries"]
