"""Paths and builders the unit tests share.

tests/unit mirrors the collection's tree (plugins/module_utils/<package>/test_<module>.py, one file
per detection under plugins/module_utils/detections/), so a test file's own location says nothing
about where the repository or the recorded fixtures are: these constants do.
"""
import importlib.util
import os

UNIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS_DIR = os.path.dirname(UNIT_DIR)
REPO_ROOT = os.path.dirname(TESTS_DIR)
FIXTURES_DIR = os.path.join(UNIT_DIR, 'fixtures')


def load_script(name):
    """scripts/<name>.py as a module (the generators and release_state are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO_ROOT, 'scripts', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
