"""Runners as an administrator manages them: creating, changing, pausing, re-keying and
archiving runners (and renaming specs), the releases runners update to, and their
short-lived OCI pull tokens."""
