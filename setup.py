"""Builds the pe_actor extension module with the project's CMake build (python/CMakeLists.txt).

pip install --no-build-isolation .     (offline: Debian's setuptools and wheel)

The CMake build goes to build-pip/ (PE_BUILD_TYPE, default Release); the module is built for
the interpreter running pip. setup.cfg-style options keep setuptools' own output there too.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
BUILD = ROOT / "build-pip"
BUILD.mkdir(exist_ok=True)  # egg_info writes there


def project_version():
    match = re.search(r"project\(pe_actor VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    return match.group(1)


class cmake_build_ext(build_ext):
    """Configures and builds the pe_actor_python target, then copies the module out."""

    def build_extension(self, ext):
        cmake_dir = BUILD / "cmake"
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(cmake_dir), "-G", "Ninja",
                        f"-DCMAKE_BUILD_TYPE={os.environ.get('PE_BUILD_TYPE', 'Release')}",
                        "-DPE_PYTHON=ON", "-DPE_BUILD_TESTS=OFF",
                        f"-DPython_EXECUTABLE={sys.executable}"], check=True)
        subprocess.run(["cmake", "--build", str(cmake_dir), "--target", "pe_actor_python"], check=True)
        built = next((cmake_dir / "python").glob("pe_actor*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(
    version=project_version(),
    packages=[],  # one extension module, no Python packages (the repository's folders are C++)
    py_modules=[],
    ext_modules=[Extension("pe_actor", sources=[])],
    cmdclass={"build_ext": cmake_build_ext},
    options={"build": {"build_base": str(BUILD / "setuptools")},
             "egg_info": {"egg_base": str(BUILD)}},
    zip_safe=False,
)
