"""Code generation: statements to Python/Numba source, and compilation."""
