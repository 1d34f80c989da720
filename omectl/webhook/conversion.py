"""The conversion webhook: ConversionReviews (`apiextensions.k8s.io/v1`) for the AIM kinds served at v1alpha1 and
v1alpha2 (docs/aim-versions.md).

kube-apiserver posts one to `POST /convert/<cluster>` whenever an object must go to a version it is not stored in: a
read, list or watch in the other version, a write in it. The answer converts every object of the request to its
`desiredAPIVersion` (`omectl.core.aim.versions`, no I/O), or, if one cannot be converted, is a `Failure` naming why
(kube-apiserver then answers the request with a 500 carrying that message). A body that is no ConversionReview is a
400.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import orjson
from aiohttp import web

from omectl.core.aim.versions import ConversionError, convert

log = logging.getLogger(__name__)

REVIEW_API_VERSIONS: Final = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
"""What a review may be; the answer is of the request's version (the CRDs ask for v1)."""


class ReviewError(ValueError):
    """The body is not a ConversionReview (answered 400)."""


def conversion_answer(review: Any) -> dict[str, Any]:
    """The ConversionReview answering `review`. Raises `ReviewError` when `review` is none."""
    if not isinstance(review, Mapping) or review.get("apiVersion") not in REVIEW_API_VERSIONS:
        raise ReviewError(f"the request body is not a ConversionReview ({' or '.join(REVIEW_API_VERSIONS)})")
    request = review.get("request")
    if not isinstance(request, Mapping):
        raise ReviewError("the ConversionReview has no request")
    uid, desired, objects = request.get("uid"), request.get("desiredAPIVersion"), request.get("objects")
    if not isinstance(uid, str) or not isinstance(desired, str) or not isinstance(objects, list):
        raise ReviewError("the request needs a uid, a desiredAPIVersion and a list of objects")
    response: dict[str, Any] = {"uid": uid}
    try:
        response["convertedObjects"] = [convert(_object(o), desired) for o in objects]
        response["result"] = {"status": "Success"}
    except ConversionError as exc:
        response["result"] = {"status": "Failure", "message": str(exc)}
    return {"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": response}


def _object(obj: Any) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise ConversionError("an object of the request is not a JSON object")
    return obj


async def handle_conversion(request: web.Request) -> web.Response:
    """`POST /convert/<cluster>`: the cluster only names the caller in the logs; converting needs nothing of it."""
    try:
        answer = conversion_answer(orjson.loads(await request.read()))
    except (orjson.JSONDecodeError, ReviewError) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    result = answer["response"]["result"]
    if result["status"] != "Success":
        log.warning("cluster %s: conversion refused: %s", request.match_info["cluster"], result["message"])
    return web.Response(body=orjson.dumps(answer), content_type="application/json")
