"""A runner's result to a ``processed`` job: the write behind ``completed``, the checks of
a terminal message (signatures, replays), the stored output, its parsing into metrics
(duets too), the noise verdict, thresholds judged, and alert events sent as webhooks."""
