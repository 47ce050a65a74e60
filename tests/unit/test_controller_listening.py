"""`ControllerProcess.listening`: the switches are started only once the controller accepts on
its Unix socket; a socket bound but not yet listening, or another path, is not it."""
import socket

from testbed.emulation.control.controller import ControllerProcess


def test_listening_means_a_listening_unix_socket_at_the_controllers_path(tmp_path):
    ctl = object.__new__(ControllerProcess)          # only the socket's path is read
    ctl.socket = tmp_path / "of.sock"
    assert not ctl.listening()                        # nothing there
    other = socket.socket(socket.AF_UNIX)
    other.bind(str(tmp_path / "other.sock"))
    other.listen(1)
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(ctl.socket))
        assert not ctl.listening()                    # bound, not accepting yet
        s.listen(1)
        assert ctl.listening()
    other.close()
    assert not ctl.listening()                        # closed: gone
