import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Keep the tests' kernels out of the user's cache folder.
if "SYMDIFF_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["SYMDIFF_CACHE_DIR"] = tempfile.mkdtemp(prefix="symdiff-test-cache-")
