"""``python -m benchrunner``: the same as the ``benchrunner`` command."""

from benchrunner.cli.main import main

if __name__ == "__main__":
    main()
