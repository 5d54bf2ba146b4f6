"""`python -m trntui`: the `trntui` program (trntui/cli.py `entry`)."""

from trntui.cli import entry

entry()
