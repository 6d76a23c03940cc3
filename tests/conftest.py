import os
import sys

# CUDA tests run in Numba's CUDA simulator unless a GPU is asked for; Numba reads
# this when it is first imported, so it is set before anything imports Numba.
if os.environ.get("SYMDIFF_TEST_GPU") != "1":
    assert "numba" not in sys.modules, "conftest.py must run before Numba is imported"
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Keep the tests' kernels out of the user's cache folder.
if "SYMDIFF_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["SYMDIFF_CACHE_DIR"] = tempfile.mkdtemp(prefix="symdiff-test-cache-")
