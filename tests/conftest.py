"""Shared pytest set-up: import the collection the way Ansible does.

The tests import ``ansible_collections.homelab.postmortem`` from the
collections path the Makefile installs the built tarball into, so what is
tested is what `ansible-galaxy collection build` ships.
"""
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS_PATH = os.environ.get('POSTMORTEM_COLLECTIONS_PATH', os.path.join(REPO_ROOT, 'build', 'collections'))

if COLLECTIONS_PATH not in sys.path:
    sys.path.insert(0, COLLECTIONS_PATH)
