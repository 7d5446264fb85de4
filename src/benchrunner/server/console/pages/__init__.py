"""Console pages, one module per resource; each module's ``router`` is mounted by
:func:`benchrunner.server.console.install`."""
