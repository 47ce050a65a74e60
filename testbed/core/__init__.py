"""The bottom layer: errors, running commands, waiting for conditions. Imports nothing of ours."""
