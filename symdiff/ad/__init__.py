"""Automatic differentiation on the IR: graph in, graph out."""

from symdiff.ad.forward import jvp_graph
from symdiff.ad.reverse import Adjoints, vjp_graph

__all__ = ["Adjoints", "jvp_graph", "vjp_graph"]
