"""The claims of the papers (docs/claims.md), one scenario each, registered in scenarios.MODULES.
A claim with parts of its own is a package: its scenario in __init__.py, its parts beside it."""
