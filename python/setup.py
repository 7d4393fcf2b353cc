"""vramfit for Python: setup.py for Debian's setuptools (no pyproject.toml, so
pip builds it offline without an isolated build environment). The package
carries the libraries it was built with: VRAMFIT_BUILD (default ../build,
where 'make' puts them) is copied into vramfit/_lib at build time."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("VRAMFIT_BUILD", os.path.join(HERE, "..", "build")))
LIBS = {"libvramfit.so": "libvramfit.so.0", "libvramfit-cli.so": "libvramfit-cli.so"}


class build_with_libs(build_py):
    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "vramfit", "_lib")
        os.makedirs(dest, exist_ok=True)
        for src, name in LIBS.items():
            path = os.path.join(BUILD, src)
            if not os.path.isfile(path):
                raise SystemExit("vramfit: %s is missing: run 'make' first (or set VRAMFIT_BUILD)" % path)
            shutil.copyfile(path, os.path.join(dest, name))


setup(
    name="vramfit",
    version="0.1.0",
    description="GPU memory a model needs, from its own files; weights streamed into torch tensors; "
                "PyTorch memory snapshots explained",
    packages=["vramfit"],
    python_requires=">=3.9",
    cmdclass={"build_py": build_with_libs},
    zip_safe=False,
)
