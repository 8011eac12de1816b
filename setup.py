"""Ships the repo's data/, qrels/ and configs/ inside the wheel as harness/_data/ (see harness/paths.py),
and builds `harness eval`'s compiled route (harness/evaluate/_lean.c, see harness/evaluate/lean.py).

The folders stay at the repo root, where the tests, configs and README name them; only a
built wheel carries a copy. An editable install reads them in place. The C module is optional:
without a C compiler the install goes on, and `harness eval` scores through numpy alone.
"""

import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

SHIPPED = ("data", "qrels", "configs")


class build_py_with_data(build_py):
    def run(self) -> None:
        if getattr(self, "editable_mode", False):
            super().run()
            return
        # a fresh copy: setuptools leaves modules moved or removed since the last build in build/lib
        shutil.rmtree(Path(self.build_lib) / "harness", ignore_errors=True)
        super().run()
        root = Path(__file__).resolve().parent
        for name in SHIPPED:
            target = Path(self.build_lib) / "harness" / "_data" / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(root / name, target, ignore=shutil.ignore_patterns("__pycache__", ".*"))


setup(cmdclass={"build_py": build_py_with_data},
      ext_modules=[Extension("harness.evaluate._lean", ["harness/evaluate/_lean.c"], optional=True)])
