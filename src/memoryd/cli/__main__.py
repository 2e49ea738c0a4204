"""``python -m memoryd.cli``: the ``memoryd`` command."""

from memoryd.cli.app import main

main()
