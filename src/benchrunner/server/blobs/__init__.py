"""The blob store (job outputs, OCI image blobs, runner wheels): a local directory or S3,
which one a server opens, and whether it is the one the other replicas use."""
