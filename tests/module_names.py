"""Functions named like the modules and globals of symdiff's generated code
(``math``, ``np``, ``numba``): the kernels must be called something else."""

import math as m

import numpy


def math(x):
    return numpy.sin(x) * 2.0


def np(x):
    return m.exp(x) * x


def numba(x):
    y = numpy.zeros(3)
    for i in range(3):
        y[i] = x[i] * 2.0
    return numpy.sum(numpy.sin(y))
