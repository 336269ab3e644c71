import sys

from core.cli import main

sys.exit(main(process_exit=True))
