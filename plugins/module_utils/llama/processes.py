# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The llama_* detections' first question: which llama-server processes run.

Apart from server.py, which reads their settings, because every llama_* detection asks this on
every host and most hosts run no llama-server: the rest is loaded only when one does.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

# app/llama.cpp (b11434 l.65): the unified binary runs the server as `llama serve` or `llama server`
UNIFIED_SERVER_COMMANDS = ('serve', 'server')


def is_llama_server(name):
    return name == 'llama-server' or name.startswith('llama-server.')


def _is_candidate(name):
    return is_llama_server(name) or name == 'llama'


def option_start(argv):
    """Where a server's options start in its argv: 1, or 2 after `llama serve`; None for a `llama`
    that runs something else."""
    if argv and is_llama_server(os.path.basename(argv[0])):
        return 1
    if len(argv) > 1 and os.path.basename(argv[0]) == 'llama' and argv[1] in UNIFIED_SERVER_COMMANDS:
        return 2
    return None


def processes(ctx):
    """Running llama-server processes, `llama serve|server` included (read once per audit run)."""
    running, problems = ctx.processes('llama-server', _is_candidate)
    return [p for p in running if option_start(p.argv)], problems


def process_table_evidence(running, problems):
    """What every llama_* finding says of the process table: how many llama-server processes, and
    the /proc entries that could not be read."""
    evidence = {'llama_server_processes': len(running)}
    if problems:
        evidence['proc_problems'] = problems[:20]
    return evidence
