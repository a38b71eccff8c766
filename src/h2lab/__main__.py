"""``python -m h2lab``: the command line (h2lab.cli)."""

from h2lab.cli import main

main()
