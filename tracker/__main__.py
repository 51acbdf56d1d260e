"""``python -m tracker``: the command line."""

from tracker.cli import main

if __name__ == "__main__":
    main()
