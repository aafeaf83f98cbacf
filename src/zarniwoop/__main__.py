"""`python -m zarniwoop …` is the `zarniwoop` command."""

from zarniwoop.surfaces.cli import main

main()
