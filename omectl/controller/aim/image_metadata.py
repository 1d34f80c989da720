"""A v1alpha1 model's image metadata read from its image's registry, as upstream's model controller reads it
(docs/aim-resources.md, "Templates of a model"): the reference parsed, the model's imagePullSecrets (in its namespace;
for an AIMClusterModel the operator namespace) each required to exist and their credentials for the image's registry
used, then the image's config labels (`omectl.oci.client`, which keeps what it read) parsed as upstream's
`ImageMetadata`. A failure is the model's `ImageMetadataReady` False with its reason: `InvalidImageReference`,
`SecretNotFound`, `SecretAccessFailed`, `ImagePullAuthFailure` (401/403), `ImageNotFound` (404, or no linux/amd64 image
in an index), `ImagePullBackOff` (any other registry or network error), `ImageMetadataInvalid` (labels that do not
parse). An `ImagePullBackOff` (upstream's infrastructure error) is read again with the work queue's backoff
(`omectl.controller.aim.model_templates.RetryAfterStatus`); any other failure waits for the model's next reconcile
(any change, or the resync).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from omectl.core.aim.consumers import CLUSTER_MODEL
from omectl.core.aim.legacy.model_templates import ImageMetadata, from_labels, unreadable
from omectl.core.aim.meta import namespace_of
from omectl.core.jsonish import as_list, as_mapping
from omectl.kube.errors import NotFound
from omectl.kube.resources import SECRETS
from omectl.oci.client import RegistryClient, RegistryError
from omectl.oci.credentials import credentials_for
from omectl.oci.reference import parse_reference

if TYPE_CHECKING:
    from omectl.controller.aim.watch import AimWatch

log = logging.getLogger(__name__)

REASONS: Final = {"auth": "ImagePullAuthFailure", "not-found": "ImageNotFound", "generic": "ImagePullBackOff"}


async def registry_metadata(
    registry: RegistryClient,
    cluster: AimWatch,
    model: Mapping[str, Any],
    spec: Mapping[str, Any],
    operator_namespace: str,
) -> ImageMetadata:
    """The metadata of the image of `model` (`spec` its v1alpha1 spec), or why it could not be read."""
    image = str(spec.get("image") or "")
    try:
        reference = parse_reference(image)
    except ValueError as error:
        return unreadable("InvalidImageReference", f'failed to parse image reference "{image}": {error}')
    namespace = operator_namespace if model.get("kind") == CLUSTER_MODEL else namespace_of(model)
    secrets = []
    for item in as_list(spec.get("imagePullSecrets")):
        name = str(as_mapping(item).get("name") or "")
        if not name:
            continue
        try:
            secrets.append(await cluster.client.get(SECRETS, name, namespace=namespace))
        except NotFound:
            return unreadable("SecretNotFound", f'imagePullSecret "{name}" not found in namespace "{namespace}"')
        except Exception as error:  # any other failure of the API server: its words, the model's condition
            return unreadable("SecretAccessFailed", f'failed to access imagePullSecret "{name}": {error}')
    try:
        labels = await registry.labels(reference, credentials_for(reference.registry, secrets))
    except RegistryError as error:
        log.info("could not read the labels of image %s: %s", image, error)
        return unreadable(REASONS[error.kind], f'failed to fetch image "{image}": {error}')
    return from_labels(labels)
