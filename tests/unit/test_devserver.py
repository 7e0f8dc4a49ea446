"""web/devserver.py: a busy port ends the server with one line on stderr (no traceback) and exit status 1."""
import os
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_busy_port_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, os.path.join(ROOT, "web", "devserver.py"), "--port", str(port)],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [f"devserver: port {port} on 127.0.0.1 is already in use; pick another "
                                             f"with --port N (0: any free port)"]
