"""Per-element gradients of a Dask array on a local cluster (issue: parallel and CUDA
targets).

``symdiff.vectorize`` turns the gradient of a function of numbers into a batched,
broadcasting function of arrays.  Given Dask arrays it returns Dask arrays: each
chunk is one call of the compiled loop, on whichever worker holds it, so the
array can be larger than any one machine's memory and the work spreads over the
cluster.  Here: seed 004's ``z(u) = exp(sin(u^2) log(u^2))`` and its derivative
at 2 million points in 4 chunks, on a local cluster of 2 worker processes (the
transform is pickled to them as the function and its options; each worker builds
its kernel from the function's source).

With a GPU (and numba-cuda), ``target="cuda"`` runs each chunk on it instead.
"""

import math

import numpy as np

import symdiff

N = 2_000_000
CHUNK = 500_000


def z(u):
    return math.exp(math.sin(u**2) * math.log(u**2))


def by_hand(u):
    """z and dz/du with NumPy, from the chain rule written out."""
    v = u * u
    value = np.exp(np.sin(v) * np.log(v))
    return value, value * (np.cos(v) * np.log(v) + np.sin(v) / v) * 2.0 * u


def main():
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    batched = symdiff.vectorize(symdiff.value_and_grad(z), target="parallel")
    step = 2.9 / N
    u = 0.1 + step * da.arange(N, chunks=CHUNK)  # built by the workers, chunk by chunk
    values, slopes = batched(u)  # Dask arrays, nothing computed yet
    print(f"{N} points in {u.npartitions} chunks of {CHUNK}: {type(values).__name__}")

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster,
        Client(cluster),
    ):
        values, slopes = da.compute(values, slopes)

    want_values, want_slopes = by_hand(0.1 + step * np.arange(N))
    assert np.allclose(values, want_values, rtol=1e-13, atol=0)
    assert np.allclose(slopes, want_slopes, rtol=1e-12, atol=1e-14)

    print("the loop each chunk runs:")
    print(batched.source)
    print(f"RESULT mean z = {float(np.mean(values))!r}")
    print(f"RESULT mean dz/du = {float(np.mean(slopes))!r}")
    print("OK")


if __name__ == "__main__":
    main()
