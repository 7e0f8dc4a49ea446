"""A static HTTP server for the repository on 127.0.0.1 (web/ pages, build/web/ assets), used by the demo job and
the browser tests; extra URL prefixes can be mounted on other folders. `python3 web/devserver.py [--port N]`."""
import argparse
import errno
import functools
import http.server
import os
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TYPES = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm", ".json": "application/json",
         ".py": "text/x-python", ".onnx": "application/octet-stream", ".whl": "application/zip",
         ".zip": "application/zip", ".bin": "application/octet-stream", ".html": "text/html"}


class Handler(http.server.SimpleHTTPRequestHandler):
    mounts = {}  # URL prefix ("/_x/") -> folder

    def translate_path(self, path):
        clean = path.split("?", 1)[0].split("#", 1)[0]
        for prefix, folder in self.mounts.items():
            if clean.startswith(prefix):
                rel = clean[len(prefix):]
                return super().translate_path("/" + rel).replace(self.directory, folder, 1)
        return super().translate_path(path)

    def guess_type(self, path):
        return TYPES.get(os.path.splitext(path)[1], None) or super().guess_type(path)

    def end_headers(self):
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, fmt, *args):  # quiet: tests and the demo job print their own lines
        if os.environ.get("ONNXIDE_SERVER_LOG"):
            super().log_message(fmt, *args)


class Server:
    """`with Server() as s: s.url` serves ROOT (and `mounts`) on 127.0.0.1 in a background thread."""

    def __init__(self, root=ROOT, port=0, mounts=None):
        self.handler = type("MountedHandler", (Handler,), {"mounts": dict(mounts or {})})
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port),
                                                     functools.partial(self.handler, directory=root))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def mount(self, prefix, folder):
        self.handler.mounts[prefix] = folder

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free one; default 8000)")
    args = ap.parse_args()
    try:
        server = Server(port=args.port)
    except OSError as e:  # a busy or forbidden port: one line, not a traceback
        why = "is already in use" if e.errno == errno.EADDRINUSE else f"cannot be opened ({e.strerror})"
        sys.exit(f"devserver: port {args.port} on 127.0.0.1 {why}; pick another with --port N (0: any free port)")
    with server as s:
        print(f"serving {ROOT} at {s.url} (demo: {s.url}web/demo/); Ctrl-C stops", flush=True)
        try:
            s.thread.join()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
