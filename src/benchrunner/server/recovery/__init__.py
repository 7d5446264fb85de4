"""Jobs no live connection watches, and what the server no longer needs: heartbeat and
hard timeouts (watchdog), the sweeper and the replica that leads it, and housekeeping
with output retention."""
