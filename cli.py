"""Run the symdiff command line from a checkout: ``python cli.py grad f.py:g``."""

from symdiff.cli import main

if __name__ == "__main__":
    main()
