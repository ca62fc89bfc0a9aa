"""Discretisation: function spaces, quadrature rules and the element pairs that need more than the
regular rule."""
