# Sourced by the .ci scripts: where the set-up pip-installs, and whether a build output is up to date.
# pip installs go into the active virtual environment. Outside one they happen only when asked — ONNXIDE_SYSTEM_PIP=1,
# which .ci/run sets on CI's throwaway machine — otherwise the set-up stops with one line before installing anything
# into the system's python3. Requirements already satisfied are never reinstalled (.ci/satisfied.py).

in_venv() { python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; }

# pip_install ARGS...: `python3 -m pip install -q ARGS` where allowed; returns 1 (with the reason) where not
pip_install() {
  if ! in_venv && [ "${ONNXIDE_SYSTEM_PIP:-}" != 1 ]; then
    echo "setup: not in a virtual environment, so not pip-installing '$*' into $(python3 -c 'import sys; print(sys.executable)'):" \
         "activate one first (python3 -m venv .venv && . .venv/bin/activate) or set ONNXIDE_SYSTEM_PIP=1 to install there" >&2
    return 1
  fi
  python3 -m pip install -q --disable-pip-version-check "$@"
}

# need REQ...: pip_install the requirements (pip arguments) unless they are all satisfied already
need() { python3 "$(dirname "${BASH_SOURCE[0]}")/satisfied.py" "$@" || pip_install "$@"; }

# tree_hash PATH...: one hash of the files under PATHs (caches and bytecode left out)
tree_hash() {
  find "$@" -type f -not -path '*/__pycache__/*' -not -name '*.pyc' -not -path '*.egg-info/*' -print0 | sort -z \
    | xargs -0 sha256sum | sha256sum | cut -c1-64
}

# up_to_date STAMP_FILE HASH OUTPUT...: whether STAMP_FILE holds HASH and every OUTPUT exists
up_to_date() {
  local stamp="$1" hash="$2"; shift 2
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ] || return 1
  for f in "$@"; do [ -e "$f" ] || return 1; done
}
