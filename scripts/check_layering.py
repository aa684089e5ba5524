#!/usr/bin/env python3
"""Checks the layering of the source tree: which top-level folder's files may include which
others' headers, which files may include CAF and Gloo, that a CPU folder never includes its
CUDA sibling, and that only device-specific folders include a concrete device's headers. ctest runs it (test `layering`) on every build, so a change that breaks a rule fails
the tests with the file, the line and the rule it broke.

    scripts/check_layering.py [ROOT]     check ROOT (default: this repository); exit 1 on any
                                         violation, 2 on bad usage
    scripts/check_layering.py --self-test
                                         plants one violation of each rule in a scratch tree
                                         and checks that each is reported (test
                                         `layering_self_test`)

The picture (README, "Layout"): each layer may include itself and what is listed for it.

    core        <- devices <- kernels <- graph <- actors <- apps
    core        <- collectives (and devices)  -------------^
    core        <- data  ---------------------------------------^
    core        <- crypto <- collectives, apps
    python: core, graph, actors        bench: everything but apps and python
"""
import os
import re
import sys
import tempfile

# What each top-level folder may include besides itself. Tests and fuzz targets may include
# anything; they are not listed.
ALLOWED = {
    "core": set(),
    "crypto": {"core"},
    "devices": {"core"},
    "kernels": {"core", "devices"},
    "collectives": {"core", "crypto", "devices"},
    "data": {"core"},
    "graph": {"core", "kernels"},
    "actors": {"core", "devices", "kernels", "collectives", "graph"},
    "apps": {"core", "crypto", "devices", "kernels", "collectives", "data", "graph", "actors"},
    "python": {"core", "crypto", "devices", "kernels", "collectives", "data", "graph", "actors"},
    "bench": {"core", "crypto", "devices", "kernels", "collectives", "data", "graph", "actors"},
}

# The only files outside tests/ that may include CAF: its types stay out of widely included
# headers (builds are slow) and out of every layer below the executor.
CAF_FILES = {
    "actors/op_actor.hpp",
    "actors/runtime.cpp",
    "collectives/net/caf_transport.cpp",
    "collectives/net/net_packet_wire.hpp",
}

# Gloo's headers stay in its backend's folder: the rest of collectives/ sees a communicator.
GLOO_FOLDER = "collectives/gloo/"

# OpenSSL's headers stay in crypto/: the rest of the engine sees digests and proofs as bytes.
# (CAF's OpenSSL module, <caf/openssl/...>, is CAF's and follows CAF's rule.)
OPENSSL_FOLDER = "crypto/"

# A concrete device's headers (its stream and event classes) are for the folders that
# implement that device kind; everything else works through devices/device.hpp and
# devices/stream.hpp (a collective backend polls any stream with stream::enqueue_polled,
# it does not cast to cpu_stream). communicators.cpp picks the GPU backend by the GPUs'
# PCI ids.
DEVICE_FOLDERS = {
    "devices/cpu/": ("devices/",),
    "devices/cuda/": ("devices/", "kernels/cuda/", "collectives/gpu/", "collectives/communicators.cpp"),
}

# A CPU implementation folder never includes its CUDA sibling (CPU-only builds have none).
CPU_CUDA_PAIRS = [("kernels/cpu/", "kernels/cuda/"), ("devices/cpu/", "devices/cuda/")]

SOURCE = re.compile(r"\.(cpp|hpp|h|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def sources(root):
    """Every source file below the listed top-level folders, as paths relative to root."""
    for top in sorted(ALLOWED):
        base = os.path.join(root, top)
        for folder, _, files in os.walk(base):
            for name in sorted(files):
                if SOURCE.search(name):
                    yield os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")


def violations(root):
    """(file, line number, message) for every include that breaks a rule."""
    found = []
    for path in sources(root):
        layer = path.split("/", 1)[0]
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                bracket, target = m.groups()
                if bracket == "<" and target.startswith("caf/") and path not in CAF_FILES:
                    found.append((path, number, f"includes <{target}>: CAF is confined to "
                                  f"{', '.join(sorted(CAF_FILES))}"))
                if bracket == "<" and target.startswith("gloo/") and not path.startswith(GLOO_FOLDER):
                    found.append((path, number, f"includes <{target}>: Gloo is confined to {GLOO_FOLDER}"))
                if bracket == "<" and target.startswith("openssl/") and not path.startswith(OPENSSL_FOLDER):
                    found.append((path, number, f"includes <{target}>: OpenSSL is confined to {OPENSSL_FOLDER}"))
                if bracket != '"' or "/" not in target:
                    continue
                for folder, allowed in DEVICE_FOLDERS.items():
                    if target.startswith(folder) and not path.startswith(allowed):
                        found.append((path, number, f'includes "{target}": only '
                                      f"{', '.join(allowed)} may include {folder} (use the "
                                      "device and stream interfaces)"))
                target_layer = target.split("/", 1)[0]
                if target_layer in ALLOWED and target_layer != layer and target_layer not in ALLOWED[layer]:
                    rule = (f"{layer}/ may include only {', '.join(sorted(ALLOWED[layer]))}"
                            if ALLOWED[layer] else f"{layer}/ includes nothing outside itself")
                    found.append((path, number, f'includes "{target}": {rule}'))
                for cpu, cuda in CPU_CUDA_PAIRS:
                    if path.startswith(cpu) and target.startswith(cuda):
                        found.append((path, number, f'includes "{target}": {cpu} must build '
                                      f"without {cuda}"))
    return found


def check(root):
    found = violations(root)
    for path, number, message in found:
        print(f"{path}:{number}: {message}")
    if found:
        print(f"check_layering: {len(found)} violation(s)", file=sys.stderr)
        return 1
    print(f"check_layering: {sum(1 for _ in sources(root))} files keep the layering")
    return 0


def self_test():
    """One planted violation per rule, each of which must be reported, and a clean file."""
    planted = {
        "core/bad_up.hpp": ('#include "devices/device.hpp"\n', "core/ includes nothing outside itself"),
        "kernels/cpu/bad_cuda.cpp": ('#include "kernels/cuda/x.hpp"\n', "must build without kernels/cuda/"),
        "graph/bad_caf.cpp": ("#include <caf/all.hpp>\n", "CAF is confined to"),
        "data/bad_graph.cpp": ('#include "graph/builder.hpp"\n', "data/ may include only core"),
        "collectives/net/bad_cast.cpp": ('#include "devices/cpu/cpu_stream.hpp"\n', "may include devices/cpu/"),
        "collectives/cpu/bad_gloo.cpp": ("#include <gloo/allreduce.h>\n", "Gloo is confined to"),
        "apps/run/bad_openssl.cpp": ("#include <openssl/evp.h>\n", "OpenSSL is confined to"),
    }
    with tempfile.TemporaryDirectory() as root:
        for path, (text, _) in planted.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        os.makedirs(os.path.join(root, "actors"))
        with open(os.path.join(root, "actors", "fine.cpp"), "w") as f:
            f.write('#include "graph/builder.hpp"\n#include <vector>\n')
        found = violations(root)
    failures = []
    for path, (_, expected) in planted.items():
        if not any(p == path and expected in message for p, _, message in found):
            failures.append(f"{path}: not reported (expected '{expected}')")
    if any(p == "actors/fine.cpp" for p, _, _ in found):
        failures.append("actors/fine.cpp: reported, but actors/ may include graph/")
    if len(found) != len(planted):
        failures.append(f"{len(found)} violations reported for {len(planted)} planted")
    for failure in failures:
        print(f"check_layering --self-test: {failure}", file=sys.stderr)
    if not failures:
        print(f"check_layering --self-test: all {len(planted)} planted violations reported")
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(root):
        print(f"check_layering: no folder {root}", file=sys.stderr)
        return 2
    return check(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
