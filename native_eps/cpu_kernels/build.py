"""Compiles the native CPU kernels (nx_*.c) into shared libraries: on x86-64 one per micro-architecture level
(baseline x86-64, x86-64-v3: AVX2 + FMA, x86-64-v4: AVX-512), which onnxide_native/lib.py chooses from at load time by
what the CPU runs; elsewhere one generic build; with --debug one -march=native build with argument checks and
AddressSanitizer. Generates nx_act_codes.h first (the activation table run as a script). Skips the work when the
sources, flags and compiler are those of the last build. Standard library only: setup.py runs it at wheel build,
build.sh at set-up. usage: python3 build.py [--out DIR] [--debug] [--werror]"""
import argparse
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TABLE = os.path.join(ROOT, "py_engine", "onnxide", "ops", "activations.py")
COMMON = ["-fno-math-errno", "-fno-trapping-math", "-pthread", "-fPIC", "-shared", "-fvisibility=hidden", "-std=gnu11",
          "-Wall", "-Wextra"]
RELEASE = ["-O3"]
DEBUG = ["-O1", "-g", "-fno-omit-frame-pointer", "-DNX_DEBUG", "-fsanitize=address", "-march=native"]
LEVEL_FLAGS = {  # per lib.LEVELS name: what the compiler targets (tuning stays generic: the wheel runs anywhere)
    "x86-64": ["-march=x86-64"],
    "x86-64-v3": ["-march=x86-64-v3"],
    "x86-64-v4": ["-march=x86-64-v4", "-mprefer-vector-width=512"],
}


class BuildError(Exception):
    """The compiler failed (its message is the exception's)."""


def _lib_names():
    """onnxide_native/lib.py (standard library only), loaded by path: the level names and file names it looks for."""
    spec = importlib.util.spec_from_file_location("_nx_lib", os.path.join(ROOT, "native_eps", "onnxide_native",
                                                                            "lib.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert set(mod.LEVELS) == set(LEVEL_FLAGS), (mod.LEVELS, LEVEL_FLAGS)
    return mod


def compiler(cc=None):
    """The C compiler to use ($CC, else gcc, else cc) as a path, or None when there is none."""
    for name in ([cc] if cc else []) + ([os.environ["CC"]] if os.environ.get("CC") else []) + ["gcc", "cc"]:
        path = shutil.which(name)
        if path:
            return path
    return None


def _targets_x86_64(cc):
    out = subprocess.run([cc, "-dumpmachine"], capture_output=True, text=True).stdout
    return out.startswith(("x86_64", "amd64"))


def plan(cc, debug=False, werror=False):
    """[(file name, flags)] this compiler builds."""
    lib = _lib_names()
    extra = COMMON + (["-Werror"] if werror else [])
    if debug:
        return [(lib.FILE, DEBUG + extra)]
    if not _targets_x86_64(cc):
        return [(lib.FILE, RELEASE + extra)]
    return [(lib.level_file(name), RELEASE + LEVEL_FLAGS[name] + extra) for name in lib.LEVELS]


def _stamp(cc, jobs, header):
    h = hashlib.sha256()
    h.update(subprocess.run([cc, "--version"], capture_output=True).stdout)
    h.update(repr(jobs).encode() + header.encode())
    for name in sorted(os.listdir(HERE)):
        if name.endswith((".c", ".h")):
            with open(os.path.join(HERE, name), "rb") as f:
                h.update(name.encode() + f.read())
    return h.hexdigest()


def build(out, debug=False, werror=False, cc=None, quiet=False):
    """Builds into `out` (the header, the libraries); returns the libraries' paths. Raises BuildError when the
    compiler fails, FileNotFoundError when there is none."""
    cc_path = compiler(cc)
    if cc_path is None:
        raise FileNotFoundError("no C compiler ($CC, gcc or cc) on PATH")
    os.makedirs(out, exist_ok=True)
    header = subprocess.run([sys.executable, "-I", TABLE, "--c-enum", "NX"], check=True, capture_output=True,
                            text=True).stdout
    jobs = plan(cc_path, debug, werror)
    paths = [os.path.join(out, name) for name, _ in jobs]
    stamp_path, stamp = os.path.join(out, "build.stamp"), _stamp(cc_path, jobs, header)
    if all(map(os.path.isfile, paths)) and os.path.isfile(stamp_path) and open(stamp_path).read() == stamp:
        if not quiet:
            print(f"native CPU kernels: up to date in {out}")
        return paths
    with open(os.path.join(out, "nx_act_codes.h.tmp"), "w") as f:
        f.write(header)
    os.replace(os.path.join(out, "nx_act_codes.h.tmp"), os.path.join(out, "nx_act_codes.h"))
    sources = sorted(os.path.join(HERE, n) for n in os.listdir(HERE) if n.startswith("nx_") and n.endswith(".c"))
    procs = [(path, subprocess.Popen([cc_path, *flags, "-I", out, "-o", path + ".tmp", *sources],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
             for path, (_, flags) in zip(paths, jobs)]
    failed = []
    for path, proc in procs:  # the levels compile side by side
        msg = proc.communicate()[0]
        if proc.returncode:
            failed.append(f"{os.path.basename(path)}: {cc_path} exited {proc.returncode}\n{msg}")
        else:
            os.replace(path + ".tmp", path)
    if failed:
        raise BuildError("\n".join(failed))
    single = os.path.join(out, _lib_names().FILE)
    if not debug and single not in paths and os.path.isfile(single):
        os.remove(single)  # an older single build would shadow nothing but mislead
    with open(stamp_path, "w") as f:
        f.write(stamp)
    if not quiet:
        for p in paths:
            print(f"native CPU kernels: {p}")
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("usage:")[0])
    ap.add_argument("--out", help="output folder (default: build/native, or build/native-debug with --debug)")
    ap.add_argument("--debug", action="store_true", help="one -O1 build with argument checks and AddressSanitizer")
    ap.add_argument("--werror", action="store_true", help="warnings are errors (the set-up build)")
    args = ap.parse_args()
    out = args.out or os.path.join(ROOT, "build", "native-debug" if args.debug else "native")
    try:
        build(out, args.debug, args.werror)
    except (BuildError, FileNotFoundError) as e:
        sys.exit(f"build.py: {e}")


if __name__ == "__main__":
    main()
