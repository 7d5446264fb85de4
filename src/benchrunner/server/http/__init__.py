"""What the routes and the services share of HTTP: API errors as Bencher shapes them,
bounded request bodies, and requests counted per key in a sliding window (rate limits)."""
