"""Bisection (docs/how-to/bisect.md): which commit between a good and a bad version changed a
benchmark, found by duets on the project's runners.

``search`` decides (pure: verdicts and where to look next), ``rows`` stores, ``start`` starts
one a member asks for and ``auto`` one an alert asks for, ``jobs`` makes a step's duet job,
``advance`` moves a bisection on from what its jobs gave, ``driver`` runs ``advance`` when jobs
finish, ``actions`` cancels one, and ``views`` shows a bisection as the API answers it
(``routes.bisections``)."""
