"""The OCI registry under ``/v2/``: one repository per project, named by its UUID or slug.

Modules by concept: ``errors`` (the Distribution Spec's error bodies), ``references`` (names,
tags, digests), ``manifests`` (media types and what a manifest refers to), ``access`` (JWT
scopes and the 401 challenge), ``token_routes`` (``/v0/auth/oci/token``), ``uploads`` (upload
session ids), and the routes: ``blob_routes``, ``upload_routes``, ``manifest_routes``.
"""
