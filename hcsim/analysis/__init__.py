"""Analytical models: queueing formulas and exact numerics to check simulations against."""
