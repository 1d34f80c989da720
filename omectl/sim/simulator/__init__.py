"""The workload simulator: the kubelets, scheduler and workload controllers of one embedded cluster (optional).

Turned on per cluster with `EmbeddedAPIServer(simulator=SimulatorConfig(pools=(NodePool(...), ...)))`; it runs
as one asyncio task fed by store events, so a workload becomes ready after (never during) the write that
created it. `await server.simulator.wait_idle()` waits until it has caught up. It only acts on kinds the
cluster serves, and picks up CRDs installed later.

What it does, and the contract other code may rely on:

- **Nodes.** One `v1` Node per pool member, `<cluster>-<pool.name>-node-<i>` (pool name default `gpu`), Ready,
  `status.capacity` = `status.allocatable` = cpu, memory, pods, ephemeral-storage and `<gpu_resource>: <gpus>`;
  labels `kubernetes.io/hostname`, `node.kubernetes.io/instance-type`, `gpu.omectl.io/type: <model>`,
  `gpu.omectl.io/vendor: nvidia|amd`, `sim.omectl.io/node-pool: <pool name>`, and the GPU vendor's labeller's
  (`nodes.gpu_labels`: `amd.com/gpu.device-id|family|vram`, `nvidia.com/gpu.product|memory|count`). Created when
  the server starts (existing ones are left alone). Every Node in the store counts for scheduling, simulated or not.
- **Model agent.** For each `ome.io/v1beta1` ClusterBaseModel / BaseModel whose storage URI (or name) the model
  table knows (`.models.BUILTIN_MODELS`, overridden by `SimulatorConfig.model_metadata`), the spec fields upstream's
  agent reads from config.json and the spec leaves unset are written into the spec first (manager
  `ome-model-agent`). Then every simulated node gets the label
  `omectl.core.ome.render.model_node_selector_key(...)`: `"Ready"` (removed when the model is deleted); a model
  with a status subresource and no `status.state` gets `status.state: Ready` and `status.nodesReady`.
- **Scheduling** (Deployments, LeaderWorkerSets, KServe InferenceServices). A pod fits a node when the node is
  not `spec.unschedulable`, has every `nodeSelector` label, and has free GPUs for the pod's requests (see
  `gpu_requests`); taints, cpu and memory are ignored. Pods go to the first fitting node by name; the GPUs
  stay bound until the workload is deleted (or being deleted) or its shape (replicas, GPU requests,
  nodeSelector) changes; freed GPUs go to pending workloads in the order they were created. A LeaderWorkerSet
  group (leader + size-1 workers) is placed whole or not at all. A spec change that keeps the shape only
  moves `observedGeneration` on. Status is rewritten only when it changes, and only for spec (generation)
  changes, never for status or metadata writes.
- **Image pulls.** Nodes pull from one registry, `SimulatorConfig.registry` (`.images.ImageRegistry`), which has
  every image except those matching its `missing` glob patterns (tried against the image as written and as
  containerd qualifies it, `docker.io/library/nginx:latest` for `nginx`). A Deployment's or LWS's running pods
  are not made as objects; a KServe predictor's are (below, "KServe predictor pods"). A placed pod with a
  container whose image is missing is made, as its workload's controller would make it (a
  Deployment's `<name>-<pod-template-hash>-<suffix>`, an LWS's `<name>-<group>[-<worker>]`, a KServe predictor's
  `<name>-predictor-<hash>-<suffix>`; owned by the workload itself, bound to its node), and kubelet fails it:
  status `ErrImagePull` (message: containerd's `rpc error: code = NotFound desc = failed to pull and unpack
  image "<ref>": ...`) then `ImagePullBackOff` (`Back-off pulling image "<image>"`), phase `Pending`, `Ready` and
  `ContainersReady` False `ContainersNotReady` (`containers with unready status: [<names>]`), its other
  containers running; Events `Scheduled`, `Pulling`, `Failed` (`Failed to pull image ...`, `Error:
  ErrImagePull`), `BackOff`, `Failed` (`Error: ImagePullBackOff`). The pod keeps its GPUs; kubelet's retries
  are not simulated (it stays in `ImagePullBackOff`). The workload counts none of its groups ready and its
  unavailability message (the contract below) ends `ImagePullBackOff: Back-off pulling image "<image>"`
  (after the scheduler's message when some groups are not placed either). A spec whose pods can all pull
  deletes them; a stuck pod deleted by hand is made again.
- **KServe predictor pods.** Each placed pod of a KServe InferenceService whose images pull is a Pod, as KServe's
  raw Deployment and kubelet make it: `<name>-predictor-<hash>-<suffix>`, labelled with the InferenceService's
  and its predictor's labels, `serving.kserve.io/inferenceservice: <name>`, `component: predictor`,
  `app: isvc.<name>-predictor` and `pod-template-hash`, owned by the InferenceService (the garbage collector
  deletes it with it), bound to its node (Event `Scheduled`), then `Running` with `Ready` and `ContainersReady`
  True, every container running: written before the InferenceService's status says Ready (upstream aim-engine
  reads a service's `InferenceServicePodsReady` from these pods). One deleted by hand is made again.
- **The unavailability contract.** When some replica (group) does not fit, the scheduler's message is, in
  kube-scheduler's words, `0/2 nodes are available: 2 Insufficient nvidia.com/gpu.` or
  `0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.` (one `<count> <reason>` per
  reason, sorted, comma-separated; `no nodes available to schedule pods` without nodes), and it appears
  1. in a `v1` Event on the workload: type `Warning`, reason `FailedScheduling`, source/reportingComponent
     `default-scheduler`, once per distinct message; for a KServe InferenceService also on a Pod per group not
     placed, made as for a failed pull (`<name>-predictor-<hash>-<suffix>`, owned by it; none for a predictor
     naming no image) but bound to no node: phase `Pending`, `PodScheduled` False `Unschedulable` with the
     message, after its own `FailedScheduling` Event (once per distinct message); bound to its node once the
     group is placed (upstream aim-engine reads a service's `FailedScheduling` from this pod);
  2. in the False availability condition's message, after the kind's usual text and one space, followed by
     kubelet's `ImagePullBackOff: ...` (above) when a placed pod cannot pull its image (that alone when every
     group is placed):
     - Deployment `Available`: True `MinimumReplicasAvailable` `Deployment has minimum availability.`, or
       False `MinimumReplicasUnavailable` `Deployment does not have minimum availability. <message>`;
       `Progressing` True `NewReplicaSetAvailable` (`ReplicaSet "<name>-<hash>" has successfully progressed.`)
       or True `ReplicaSetUpdated` (`... is progressing.`); counts `observedGeneration`, `replicas`,
       `updatedReplicas`, `readyReplicas`, `availableReplicas`, `unavailableReplicas` (zeros omitted, as the
       API serializes them).
     - LeaderWorkerSet `Available`: True `AllGroupsReady` `All replicas are ready` (and `Progressing` False),
       or False `GroupsProgressing` `Replicas are progressing. <message>` (and `Progressing` True
       `GroupsProgressing` `Replicas are progressing`); `replicas`/`updatedReplicas` = groups,
       `readyReplicas` = groups fully placed (and pulled), `hpaPodSelector`.
     - KServe InferenceService `PredictorReady` and `Ready`: True, or False `MinimumReplicasUnavailable`
       `Deployment does not have minimum availability. <message>`; `url` and `address.url`
       `http://<name>.<namespace>.svc.cluster.local`, `observedGeneration`.
- **AIMArtifact Jobs** (pod template labelled `aim.eai.amd.com/component: download` or `check-size`) run as
  upstream's artifact downloader would, from their container's source URI and env and `SimulatorConfig.sources`
  (`.downloader`: missing and gated sources, S3 credentials, sizes, the `AIM_DEBUG_*` switches, a PVC too small for
  the files): one Pod per attempt (`job-name` labels, owned by the Job) ending Succeeded or Failed with its
  container's termination message (the check-size line or the log's tail), `status.progress` patched on the
  artifact as the progress monitor does, the Job failed after `backoffLimit` + 1 failed attempts (`.artifact_jobs`).
- **KEDA.** A KServe InferenceService annotated `serving.kserve.io/autoscalerClass: keda` gets the `autoscaling/v2`
  HorizontalPodAutoscaler KEDA makes for its predictor, `keda-hpa-<name>-predictor` (`.keda`: its labels and KEDA's,
  owned by it, the predictor's bounds, its status as when metrics flow); deleted when it is no longer so autoscaled.
- **Other Jobs** finish at once (unless `spec.suspend`): `startTime`, `completionTime`, `succeeded` (completions,
  default 1), conditions `SuccessCriteriaMet` and `Complete` True `CompletionsReached`, `active`/`ready`/
  `terminating` 0. With annotation `sim.omectl.io/result: Failed`, or a container whose env sets
  `AIM_DEBUG_CAUSE_FAILURE` (upstream's artifact downloader then fails at once): `failed: 1`, conditions
  `FailureTarget` and `Failed` True `BackoffLimitExceeded`, no completionTime. An AIM discovery Job carrying
  `sim.omectl.io/discovery-result` first writes its result ConfigMap (`omectl.core.aim.discovery.
  simulated_discovery_configmap`, same name and namespace, owned by the Job), as the discovery container would;
  one without it running a simulated image's `dry-run` writes what that image prints (`dry_runs`).
- **PersistentVolumeClaims** bind as the volume binder does: a spec write (`spec.volumeName: pvc-<uid>`,
  annotations `pv.kubernetes.io/bind-completed` and `bound-by-controller`), then status `phase: Bound`,
  `accessModes`, `capacity.storage` = the request. A claim a client set `Lost` stays Lost (its volume is gone; the
  binder does not bind it again).
"""

from __future__ import annotations

from omectl.core.ome.workloads import GPU_RESOURCES, gpu_requests, workload_shape
from omectl.sim.simulator.config import NODES_HELP, NodePool, SimulatorConfig, parse_nodes_option, parse_pools
from omectl.sim.simulator.downloader import ModelSources
from omectl.sim.simulator.engine import WorkloadSimulator
from omectl.sim.simulator.images import ImageRegistry

__all__ = [
    "GPU_RESOURCES",
    "NODES_HELP",
    "ImageRegistry",
    "ModelSources",
    "NodePool",
    "SimulatorConfig",
    "WorkloadSimulator",
    "gpu_requests",
    "parse_nodes_option",
    "parse_pools",
    "workload_shape",
]
