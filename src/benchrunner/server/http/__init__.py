"""What the routes and the services share of HTTP: API errors as Bencher shapes them, what
every JSON request body must satisfy (and the threshold models' bodies), bounded request
bodies, and requests counted per key in a sliding window (rate limits)."""
