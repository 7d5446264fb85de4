"""The benchrunner server, in packages by concept (docs/explanation/architecture.md): ``app``
wires them; ``routes`` (the API) and ``console`` (the web pages) are thin over the services
(``submission``, ``scheduling``, ``channel``, ``processing``, ``recovery`` and the rest, with
the access policy in ``access``); ``store`` holds the tables and queries and imports nothing
above it."""
