"""``python -m symdiff.cli``."""

from symdiff.cli import main

if __name__ == "__main__":
    main(prog_name="symdiff")
