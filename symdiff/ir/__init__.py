"""The intermediate representation: a hash-consed, shape- and dtype-aware DAG."""

from symdiff.ir.node import Node, constant, make, topological, use_counts
from symdiff.ir.ops import OPS, OpSpec

__all__ = ["OPS", "Node", "OpSpec", "constant", "make", "topological", "use_counts"]
