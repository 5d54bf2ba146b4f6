"""Analyses over a `Profile`: plain data out, no UI imports."""
