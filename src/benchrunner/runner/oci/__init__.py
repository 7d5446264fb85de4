"""OCI images on the runner: pull by digest (``pull``), a content-addressed cache (``cache``),
and safe application of layers to a root filesystem (``unpack``)."""
