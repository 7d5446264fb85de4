"""Pure domain logic: job states, claim policy, timeouts, token formats, templates, time.

Nothing in this package imports the server, the runner or the CLI.
"""
