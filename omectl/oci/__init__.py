"""Reading an image's config labels from its OCI registry (the distribution API over aiohttp), as upstream's AIM model
controller does for an image's metadata."""
