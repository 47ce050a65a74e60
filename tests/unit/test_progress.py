"""Progress (testbed/core/progress.py): a live status line in a pseudo-terminal, timestamped
plain lines on a pipe, nothing under --json; -v adds durations, -vv the commands run."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pexpect

from testbed.core import progress

# long work as the testbed does it: nested phases, a note, a command; `work` polls, not sleeps
WORK = """
import sys, time
from testbed.core import progress, sh
view = sys.argv[1] if sys.argv[1] != "choose" else progress.choose("--json" in sys.argv)
with progress.shown(view, int(sys.argv[2])):
    with progress.phase("bring-up"):
        with progress.phase("learning NIC ports"):
            progress.note("3 of 4 learned")
            sh.run(["true"])
            end = time.monotonic() + float(sys.argv[3])
            while time.monotonic() < end:
                time.sleep(0.05)
    print('{"ok": true}')
"""


def run_piped(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WORK, *args], capture_output=True, text=True, check=False,
                          timeout=60)


def test_on_a_pipe_one_timestamped_plain_line_per_phase():
    proc = run_piped("choose", "0", "0")
    assert proc.stdout == '{"ok": true}\n'
    lines = proc.stderr.splitlines()
    assert [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in lines] == \
        ["bring-up", "bring-up > learning NIC ports"]
    assert all(re.match(r"\d\d:\d\d:\d\d \S", line) for line in lines)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", proc.stderr)    # no escape, no \r


def test_v_adds_each_phase_duration_and_vv_the_commands():
    once = run_piped("lines", "1", "0").stderr
    assert re.search(r"  learning NIC ports: \d+\.\d s \(3 of 4 learned\)", once)
    assert re.search(r"  bring-up: \d+\.\d s", once)
    assert "$ true" not in once
    assert "  $ true" in run_piped("lines", "2", "0").stderr


def test_under_json_nothing_but_the_result():
    proc = run_piped("choose", "2", "0", "--json")
    assert proc.stdout == '{"ok": true}\n'
    assert proc.stderr == ""


def in_a_terminal(term: str, seconds: str) -> pexpect.spawn:
    """WORK in a pseudo-terminal whose TERM is `term` (not the caller's: a test run from a pipe,
    CI or the distro lane has TERM=dumb or none)."""
    return pexpect.spawn(sys.executable, ["-c", WORK, "choose", "0", seconds], encoding="utf-8",
                         timeout=30, dimensions=(24, 120), env={**os.environ, "TERM": term})


def test_in_a_terminal_a_live_status_redrawn_as_the_work_goes():
    child = in_a_terminal("xterm-256color", "6")
    # each redraw shows the innermost phase's clock: seen at 1 s, 3 s and 5 s, it was redrawn in
    # every 2 s (the bound; it redraws 4 times a second)
    for second in (1, 3, 5):
        child.expect(rf"bring-up > learning NIC ports: 3 of 4 learned \[{second}s\]")
    child.expect(r'\{"ok": true\}')
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_dumb_terminal_gets_the_timestamped_lines():
    """TERM=dumb (an Emacs shell, a plain console) cannot redraw a line, and rich draws no live
    line there at all: the phases come as lines, as on a pipe, so the user still sees them."""
    child = in_a_terminal("dumb", "0")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    lines = child.before.splitlines()
    assert [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in lines] == \
        ["bring-up", "bring-up > learning NIC ports", '{"ok": true}']
    assert "\x1b" not in child.before


def test_steps_count_k_of_n_with_an_eta(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    steps = progress.Steps("tour", 3)
    assert steps.title(1, "a") == "tour 1 of 3: a (0s elapsed)"
    with steps.step("a"):
        now[0] += 90
    assert steps.title(2, "b") == "tour 2 of 3: b (1m30s elapsed, ETA 3m00s)"


def test_the_tour_line_moves_while_a_step_runs(monkeypatch):
    """The elapsed time and the ETA are those of now at each redraw, not of the step's start:
    the ETA counts down through the step and stops at the steps still to come."""
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    steps = progress.Steps("tour", 3)
    with steps.step("a"):
        now[0] += 60
    with steps.step("b"):
        assert progress.status_text() == "tour 2 of 3: b (1m00s elapsed, ETA 2m00s) [0s]"
        now[0] += 45
        assert progress.status_text() == "tour 2 of 3: b (1m45s elapsed, ETA 1m15s) [45s]"
        now[0] += 120                          # longer than the mean: only the next step is left
        assert progress.status_text() == "tour 2 of 3: b (3m45s elapsed, ETA 1m00s) [2m45s]"


def test_a_note_may_be_said_anew_at_each_redraw(monkeypatch):
    monkeypatch.setattr(progress.time, "monotonic", lambda: 100.0)
    left = [5]
    with progress.phase("measuring"):
        progress.note(lambda: f"fault 1 of 2 in place, {left[0]}s left")
        assert progress.status_text() == "measuring: fault 1 of 2 in place, 5s left [0s]"
        left[0] = 2
        assert progress.status_text().startswith("measuring: fault 1 of 2 in place, 2s left")


def test_rounds_say_k_of_n_and_the_time_left(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    seen = []
    with progress.phase("measuring"):
        for k in progress.rounds(3):
            seen.append(progress.status_text())
            now[0] += 10 * (k + 1)
            seen.append(progress.status_text())
    assert seen == ["measuring: round 1 of 3 [0s]", "measuring: round 1 of 3 [10s]",
                    "measuring: round 2 of 3, 20s left [10s]", "measuring: round 2 of 3, 10s left [30s]",
                    "measuring: round 3 of 3, 15s left [30s]", "measuring: round 3 of 3, 0s left [1m00s]"]


def test_off_is_silent_and_the_stack_unwinds_on_an_error(capsys):
    try:
        with progress.phase("outer"), progress.phase("inner"):
            raise ValueError
    except ValueError:
        pass
    assert progress.status_text() == ""
    assert capsys.readouterr() == ("", "")


def test_clock_reads_as_a_person_would():
    assert [progress.clock(s) for s in (4.4, 65, 3725)] == ["4s", "1m05s", "1h02m"]
