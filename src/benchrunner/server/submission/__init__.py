"""The submission service (``service.submit_run``), called by ``POST /v0/run``, the console's
job form and the calibrations: the body and its modes (``body``, ``duet_body``), the project
a run goes to (``projects``), an image job's image and spec (``images``), and what a
submission must pass before it creates a job: its ``Idempotency-Key``, the backlog's cap
(backpressure), and how many organizations anonymous runs may create."""
