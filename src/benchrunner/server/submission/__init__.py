"""What a submission must pass before it creates a job: its ``Idempotency-Key``, the
backlog's cap (backpressure), and how many organizations anonymous runs may create."""
