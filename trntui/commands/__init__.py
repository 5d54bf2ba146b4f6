"""CLI subcommands; each module has `register(subparsers)` and keeps heavy imports inside its handler."""
