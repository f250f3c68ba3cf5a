"""Hostile cases' tools: a tree's contents compared before and after (what a detection or a refused fix may not
change), a module run as a host runs it, and real mounts and file attributes (as root, as make test runs; without
root the tests that need them are skipped, saying so)."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry

BOUND_S = 15
COLLECTIONS = registry.__file__
for _level in range(6):
    COLLECTIONS = os.path.dirname(COLLECTIONS)
MODULES = os.path.join(COLLECTIONS, 'ansible_collections', 'homelab', 'postmortem', 'plugins', 'modules')
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason='a mount or a file attribute needs root')


def snapshot(root):
    """Path -> (kind, sha256 or link target) for everything under root, without following links."""
    found = {}
    for top, dirs, files in os.walk(str(root)):
        for name in dirs + files:
            path = os.path.join(top, name)
            if os.path.islink(path):
                found[path] = ('link', os.readlink(path))
            elif os.path.isfile(path):
                with open(path, 'rb') as handle:
                    found[path] = ('file', hashlib.sha256(handle.read()).hexdigest())
            else:
                found[path] = ('other', os.lstat(path).st_mode)
    return found


def run_as_host(tmp_path, module, args, check=False, diff=True, timeout=BOUND_S, prefix=()):
    """The module as a host runs it: its own interpreter, its arguments from a JSON file, after ``prefix`` (a
    command that runs it, like unshare). The JSON result, with the time it took; a traceback fails the test."""
    # The arguments live outside tmp_path, whose tree the tests compare before and after.
    handle, args_file = tempfile.mkstemp(suffix='.json', prefix='%s-args-' % module)
    with os.fdopen(handle, 'w') as out:
        json.dump({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=check, _ansible_diff=diff)}, out)
    started = time.monotonic()
    try:
        proc = subprocess.run(list(prefix) + [sys.executable, os.path.join(MODULES, module + '.py'), args_file], capture_output=True,
                              text=True, timeout=timeout + 30, env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False)
    finally:
        os.unlink(args_file)
    elapsed = time.monotonic() - started
    assert 'Traceback' not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert elapsed <= timeout, (elapsed, result)
    return result


def warning_texts(result):
    """A module result's warnings as text: ansible-core 2.19 and later print each as a structured event."""
    return [w if isinstance(w, str) else w['event']['msg'] for w in result.get('warnings') or []]


@contextmanager
def mounted(target, kind, source=None):
    """A real mount at ``target`` for the test's length: 'tmpfs' (64 KiB), 'bind' (a bind mount of ``source``)
    or 'readonly' (a read-only bind mount of ``source``). Always unmounted."""
    os.makedirs(target, exist_ok=True)
    if kind == 'tmpfs':
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', target], check=True)
    else:
        subprocess.run(['mount', '--bind', source, target], check=True)
    try:
        if kind == 'readonly':
            subprocess.run(['mount', '-o', 'remount,bind,ro', target], check=True)
        yield target
    finally:
        subprocess.run(['umount', target], check=True)


@contextmanager
def immutable(path):
    """``path`` with the immutable attribute (chattr +i) for the test's length: the kernel refuses to replace,
    rename or remove it, even for root, while its directory stays writable. Always cleared."""
    proc = subprocess.run(['chattr', '+i', str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, 'chattr +i %s (ext4 keeps the attribute): %s' % (path, proc.stderr.strip())
    try:
        yield path
    finally:
        subprocess.run(['chattr', '-i', str(path)], check=True)


def fill(directory):
    """Write into ``directory`` until its filesystem is full."""
    with open(os.path.join(directory, 'filler'), 'wb', buffering=0) as handle:
        try:
            while True:
                handle.write(b'\0' * 4096)
        except OSError:
            pass
