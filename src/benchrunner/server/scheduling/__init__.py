"""Claims: the dispatcher's waiting claims, the wake-ups that end them (in this process
and across replicas), and a new job handed to an idle runner by its own submission."""
