"""Browser-test fixtures: one headless Chromium (Debian's, via Python playwright) and one 127.0.0.1 server per
session; tests skip with the reason when Chromium, playwright or build/web/ (bash .ci/setup_web.sh) are missing."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "web"))

from chromium import Browser, unavailable  # noqa: E402
from devserver import Server  # noqa: E402

BUILD = os.path.join(ROOT, "build", "web")


def _why_skip():
    why = unavailable()
    if why:
        return why
    if not os.path.isfile(os.path.join(BUILD, "manifest.json")):
        return "build/web/ missing (run bash .ci/setup_web.sh)"
    return None


def pytest_addoption(parser):
    parser.addoption("--browser-full", action="store_true", default=False,
                     help="run all 2,033 ONNX backend cases in Chromium and write docs/conformance/browser.md")
    parser.addoption("--browser-ep", default="cpu", choices=["cpu", "wasm", "webgpu"],
                     help="EP the browser conformance runs first: cpu (default), wasm (WasmExecutionProvider, "
                          "compared with the native WASM EP through wasmtime; --browser-full writes "
                          "docs/conformance/wasm.md) or webgpu (SwiftShader in the page, lavapipe natively; "
                          "--browser-full writes docs/conformance/webgpu-browser.md)")


@pytest.fixture(scope="session")
def scratch(tmp_path_factory):
    """A folder served at /_scratch/ (models and case files the tests make)."""
    return tmp_path_factory.mktemp("browser-scratch")


@pytest.fixture(scope="session")
def server(scratch):
    why = _why_skip()
    if why:
        pytest.skip(why)
    with Server(mounts={"/_scratch/": str(scratch)}) as s:
        yield s


@pytest.fixture(scope="session")
def browser(server):
    with Browser() as context:
        yield context


def open_page(browser, url, ready, timeout_ms=120_000):
    """A new tab at `url`, waiting until the JS expression `ready` is truthy; collects console lines in page.logs."""
    page = browser.new_page()
    page.logs = []
    page.on("console", lambda m: page.logs.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: page.logs.append(f"pageerror: {e}"))
    page.goto(url)
    page.wait_for_function(ready, timeout=timeout_ms)
    return page


@pytest.fixture(scope="module")
def api_page(browser, server, request):
    """The API test page with ?host=<param> (worker or page), booted once per module and host."""
    host = getattr(request, "param", "worker")
    page = open_page(browser, f"{server.url}tests/browser/pages/api.html?host={host}", "() => window.ortReady")
    yield page
    page.close()


@pytest.fixture(scope="session")
def plain_pyodide(browser, server):
    """A tab with plain Pyodide booted (window.pyodide, window.wheelURL)."""
    page = open_page(browser, f"{server.url}tests/browser/pages/plain.html", "() => window.pyodideReady")
    yield page
    page.close()
