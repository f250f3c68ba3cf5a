# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import this collection's code from the module's zip, compiling each file once.

AnsiballZ ships module_utils as source in a zip, and Python's zipimport compiles a module twice
when it imports it: importlib asks ``zipimporter.get_filename`` for the spec's origin, and
get_filename compiles the source only to learn the file name (``_get_module_code`` in
Lib/zipimport.py, 3.8 to 3.13), then ``exec_module`` compiles it again. Compiling is most of
what the audit's own code costs a host (docs/performance.md), so the finder installed here serves
the collection's own modules from the same zip with one compile each. Everything else, and every
import when the collection was not loaded from a zip (an installed collection, the unit tests),
is left to Python's own machinery.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys
import zipimport
from importlib.util import spec_from_loader

COLLECTION_PACKAGE = 'ansible_collections.homelab.postmortem'


class _SourceLoader:
    """Runs one module's source, read from the zip by the finder, compiled once."""

    def __init__(self, source, origin, is_package):
        self._source = source
        self._origin = origin
        self._is_package = is_package

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        exec(compile(self._source, self._origin, 'exec', dont_inherit=True), module.__dict__)

    def is_package(self, fullname):
        return self._is_package

    def get_filename(self, fullname):
        return self._origin

    def get_source(self, fullname):
        # For tracebacks (linecache asks the loader): the text, decoded as compile() decodes it.
        from io import BytesIO
        from tokenize import detect_encoding
        encoding = detect_encoding(BytesIO(self._source).readline)[0]
        return self._source.decode(encoding, 'replace')


class SingleCompileFinder:
    """Finds ``ansible_collections.homelab.postmortem.*`` in one zip; None for any other name."""

    def __init__(self, archive):
        self.archive = archive
        self._zip = zipimport.zipimporter(archive)

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(COLLECTION_PACKAGE + '.'):
            return None
        inner = fullname.replace('.', '/')
        for candidate, is_package in ((inner + '/__init__.py', True), (inner + '.py', False)):
            try:
                source = self._zip.get_data(candidate)
            except (IOError, OSError):
                continue
            origin = '%s/%s' % (self.archive, candidate)
            spec = spec_from_loader(fullname, _SourceLoader(source, origin, is_package), origin=origin,
                                    is_package=is_package)
            spec.has_location = True  # __file__, as zipimport sets it
            if is_package:
                spec.submodule_search_locations = ['%s/%s' % (self.archive, inner)]
            return spec
        return None


def install(module_loader):
    """Put the finder first on sys.meta_path when ``module_loader`` (a collection module's
    ``__loader__``) is a zipimporter, i.e. the collection runs from an AnsiballZ payload.
    True when the finder is in place."""
    if not isinstance(module_loader, zipimport.zipimporter):
        return False
    archive = module_loader.archive
    for finder in sys.meta_path:
        if isinstance(finder, SingleCompileFinder) and finder.archive == archive:
            return True
    sys.meta_path.insert(0, SingleCompileFinder(archive))
    return True
