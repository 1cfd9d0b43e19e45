"""python -m kcheck: the front end."""
import sys

from kcheck.cli import main

sys.exit(main())
