"""The API reference at ``/docs``: Swagger UI from the server's own files.

A self-hosted server may have no way out to the internet, so the page loads nothing from
elsewhere: Swagger UI's script, stylesheet and icon are vendored beside the console's assets
(``tools/vendor_console_assets.py`` pins and checks them) and served under ``/console/static``.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from benchrunner.server.console.templating import static

DOCS_PATH = "/docs"


def install(app: FastAPI) -> None:
    """Serve ``/docs`` for the document at ``app.openapi_url``; the app is built with
    ``docs_url=None`` and ``redoc_url=None`` (FastAPI's own pages fetch from a CDN)."""
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get(DOCS_PATH, include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} API",
            swagger_js_url=static("vendor/swagger-ui-bundle.js"),
            swagger_css_url=static("vendor/swagger-ui.css"),
            swagger_favicon_url=static("vendor/swagger-ui-favicon-32x32.png"),
            # Swagger UI would otherwise show a badge fetched from validator.swagger.io, sending
            # it this server's document URL.
            swagger_ui_parameters={"validatorUrl": None},
        )
