"""The controller of a run: its os-ken process (controller.py), users' own controller apps
(apps.py), and the watchdog that notices a lost part (watchdog.py)."""
