"""The runner transports and the job lifecycle they drive: a runner's WebSocket channel,
a job's own WebSocket and the long-poll claim, the session they share, the lifecycle's
handling of each runner message, and coalesced heartbeats."""
