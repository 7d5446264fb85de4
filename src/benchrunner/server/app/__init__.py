"""The server process: the app factory, which builds every service and mounts the routes,
and what it puts around them (the cap on connections, request metrics, the OpenAPI
document and its docs page, the WebSocket protocol class)."""
