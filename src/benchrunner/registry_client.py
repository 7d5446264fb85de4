"""Client of a benchrunner server's OCI registry (``/v2/``), for ``image push`` and ``run --image``.

It runs the Docker token flow itself: an API token (or none, for public pulls) is exchanged at
``/v0/auth/oci/token`` for a short-lived registry token per repository, refreshed before it
expires. Errors are the ``/v0`` client's ``ApiError``, with the registry's error message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import IO

import httpx

from benchrunner import __version__
from benchrunner.client import ApiError
from benchrunner.images import INDEX_TYPES, MANIFEST_TYPES, Blob, LocalImage, Manifest

CHUNK = 1 << 20
ACCEPT = ", ".join(sorted(INDEX_TYPES | MANIFEST_TYPES))
REFRESH_MARGIN = 30.0  # seconds before a token's expiry at which we fetch a new one


def _registry_error(response: httpx.Response) -> ApiError:
    """The registry's ``{"errors": [...]}`` or the API's ``{"message"}`` as an ApiError."""
    message = f"HTTP {response.status_code}"
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            message = f"{errors[0].get('code')}: {errors[0].get('message')}"
        elif isinstance(body.get("message"), str):
            message = body["message"]
    return ApiError(response.status_code, f"registry: {message}")


class RegistryClient:
    def __init__(
        self,
        host: str,
        api_token: str | None,
        timeout: float = 300,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.host = host.rstrip("/")
        self._api_token = api_token
        self._http = httpx.Client(
            base_url=self.host,
            headers={"User-Agent": f"benchrunner/{__version__}"},
            timeout=timeout,
            transport=transport,
        )
        self._tokens: dict[str, tuple[str, float]] = {}

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _token(self, repo: str, actions: str) -> str:
        scope = f"repository:{repo}:{actions}"
        cached = self._tokens.get(scope)
        if cached and cached[1] - REFRESH_MARGIN > time.monotonic():
            return cached[0]
        auth = ("benchrunner", self._api_token) if self._api_token else None
        response = self._send(
            "GET",
            "/v0/auth/oci/token",
            params={"scope": scope, "service": "benchrunner"},
            auth=auth,
        )
        body = response.json()
        token = str(body["token"])
        self._tokens[scope] = (token, time.monotonic() + float(body.get("expires_in", 60)))
        return token

    def _send(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)  # type: ignore[arg-type]
        except httpx.TransportError as exc:
            raise ApiError(0, f"cannot reach server at {self.host}: {exc}") from exc
        if response.is_error:
            raise _registry_error(response)
        return response

    def _v2(
        self, method: str, repo: str, path: str, actions: str = "pull", **kwargs: object
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self._token(repo, actions)}"}
        headers.update(kwargs.pop("headers", None) or {})  # type: ignore[call-overload]
        return self._send(method, f"/v2/{repo}/{path}", headers=headers, **kwargs)

    def blob_exists(self, repo: str, digest: str) -> bool:
        try:
            self._v2("HEAD", repo, f"blobs/{digest}", "pull,push")
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def push_blob(
        self, repo: str, blob: Blob, progress: Callable[[int], None] | None = None
    ) -> None:
        """One monolithic upload, streamed from disk with its length declared."""

        def body() -> Iterator[bytes]:
            with blob.open() as handle:
                yield from _read_chunks(handle, progress)

        self._v2(
            "POST",
            repo,
            "blobs/uploads/",
            "pull,push",
            params={"digest": blob.digest},
            content=body(),
            headers={
                "Content-Length": str(blob.size),
                "Content-Type": "application/octet-stream",
            },
        )

    def push_manifest(self, repo: str, reference: str, manifest: Manifest) -> str:
        response = self._v2(
            "PUT",
            repo,
            f"manifests/{reference}",
            "pull,push",
            content=manifest.content,
            headers={"Content-Type": manifest.media_type},
        )
        return str(response.headers.get("Docker-Content-Digest", manifest.digest))

    def resolve(self, repo: str, tag: str) -> str:
        """The digest a tag points at now."""
        try:
            response = self._v2("HEAD", repo, f"manifests/{tag}", headers={"Accept": ACCEPT})
        except ApiError as exc:
            if exc.status == 404:
                raise ApiError(404, f"no image tagged {tag!r} in project {repo!r}") from None
            raise
        digest = response.headers.get("Docker-Content-Digest")
        if not digest:
            raise ApiError(0, f"registry: no digest for {repo}:{tag}")
        return str(digest)

    def push_image(
        self,
        repo: str,
        image: LocalImage,
        tag: str | None,
        on_blob: Callable[[Blob, bool], Callable[[int], None] | None] | None = None,
    ) -> str:
        """Push every blob the registry lacks, then the manifests; the top digest.

        ``on_blob(blob, skipped)`` is told about each blob before it is sent and may return a
        callback that receives the byte count of each chunk as it goes.
        """
        for blob in image.blobs:
            skipped = self.blob_exists(repo, blob.digest)
            progress = on_blob(blob, skipped) if on_blob else None
            if not skipped:
                self.push_blob(repo, blob, progress)
        for child in image.manifests:
            self.push_manifest(repo, child.digest, child)
        return self.push_manifest(repo, tag or image.top.digest, image.top)


def _read_chunks(handle: IO[bytes], progress: Callable[[int], None] | None) -> Iterator[bytes]:
    while chunk := handle.read(CHUNK):
        if progress:
            progress(len(chunk))
        yield chunk
