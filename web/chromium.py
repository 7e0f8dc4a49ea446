"""Launching Debian's headless Chromium (/usr/bin/chromium) through Python playwright with the flags that work as
root here; shared by web/main_job.py and tests/browser/. Never downloads a browser."""
import os
import shutil
import tempfile

CHROMIUM = os.environ.get("ONNXIDE_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
         "--enable-unsafe-webgpu"]  # WebGPU on SwiftShader (no GPU here): the WebGPU EP's in-page tests


def unavailable():
    """None when Chromium and playwright can be used, else the reason (for pytest skips)."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"Chromium not installed at {CHROMIUM} (bash .ci/setup_web.sh installs it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Python playwright not installed (bash .ci/setup_web.sh installs it)"
    return None


def bench_unavailable(root):
    """None when a browser benchmark can run (Chromium, playwright, the built build/web/ with onnxruntime-web beside
    it under `root`), else the reason."""
    why = unavailable()
    if why is None and not os.path.isfile(os.path.join(root, "build", "web", "ort", "ort.wasm.min.mjs")):
        why = "build/web/ort/ missing; run `bash .ci/setup_web.sh` first"
    return why


class Browser:
    """`with Browser() as ctx:` one headless Chromium with a fresh profile (kept for the whole session)."""

    def __init__(self, viewport=(1100, 900)):
        self.viewport = viewport
        self.profile = tempfile.mkdtemp(prefix="onnxide-chromium-")

    def __enter__(self):
        from playwright.sync_api import sync_playwright
        self.pw = sync_playwright().start()
        self.context = self.pw.chromium.launch_persistent_context(
            self.profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": self.viewport[0], "height": self.viewport[1]})
        return self.context

    def __exit__(self, *exc):
        try:
            self.context.close()
        finally:
            self.pw.stop()
            shutil.rmtree(self.profile, ignore_errors=True)
