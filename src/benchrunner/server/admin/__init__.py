"""What ``benchrunner admin`` does to a server's database and files from outside a running
server: bootstrap (the first admin and an API token), backup and restore."""
