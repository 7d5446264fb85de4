"""The ``benchrunner`` command line: thin Typer commands over the client and the entry points of
server and runner. ``main.py`` assembles the command tree."""
