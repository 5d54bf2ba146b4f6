"""Modal screens: help, run picker, load error."""
