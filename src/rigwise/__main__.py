import sys

from rigwise.cli import run

sys.exit(run())
