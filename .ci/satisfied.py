"""Exits 0 when pip's arguments are all satisfied already (nothing to install), 1 otherwise; the set-up's `need`
(.ci/lib.sh) asks it before any pip install. Understands requirement strings (`onnx==1.23.2`, `numpy>=2.0`), wheel
files (name and version from the file name) and `-e .[extra,...]`: this tree installed editable from here, at
pyproject.toml's version, with its dependencies and those extras' satisfied. Other pip options are skipped.
usage: python3 .ci/satisfied.py ARG..."""
import importlib.metadata as md
import json
import os
import re
import sys
import tomllib

try:
    from packaging.requirements import Requirement
except ImportError:  # pip's own copy
    from pip._vendor.packaging.requirements import Requirement

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _installed(req):
    r = Requirement(req)
    if r.marker is not None and not r.marker.evaluate():
        return True
    try:
        version = md.version(r.name)
    except md.PackageNotFoundError:
        return False
    return r.specifier.contains(version, prereleases=True)


def _editable_here(extras):
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    try:
        dist = md.distribution(project["name"])
        url = json.loads(dist.read_text("direct_url.json") or "{}")
    except md.PackageNotFoundError:
        return False
    if not (url.get("dir_info", {}).get("editable") and url.get("url") == "file://" + ROOT
            and dist.version == project["version"]):
        return False
    reqs = list(project.get("dependencies", []))
    for extra in extras:
        reqs += project.get("optional-dependencies", {}).get(extra, [])
    return all(_installed(r) for r in reqs)


def satisfied(args):
    it = iter(args)
    for arg in it:
        if arg == "-e":
            spec = next(it)
            m = re.fullmatch(r"\.(?:\[([\w,\- ]+)\])?", spec)
            if not m or not _editable_here([e.strip() for e in (m.group(1) or "").split(",") if e.strip()]):
                return False
        elif arg.endswith(".whl"):
            name, version = os.path.basename(arg).split("-")[:2]
            if not _installed(f"{name}=={version}"):
                return False
        elif not arg.startswith("-") and not _installed(arg):
            return False
    return True


if __name__ == "__main__":
    sys.exit(0 if satisfied(sys.argv[1:]) else 1)
