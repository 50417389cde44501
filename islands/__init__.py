"""Island populations: several populations evolve side by side, each with its own selection and
optional specialization (a family, a FLOP bucket); the best individuals migrate between islands
on a topology (ring by default) every few generations. Selection is a tournament of our own
(a few lines drawing from the search's generator only; DEAP is not used).
"""
from evo.islands.migration import migrate
from evo.islands.population import Individual, Island, make_islands

__all__ = ["Individual", "Island", "make_islands", "migrate"]
