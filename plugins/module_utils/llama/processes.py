# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The llama_* detections' first question: which llama-server processes run.

Apart from server.py, which reads their settings, because every llama_* detection asks this on
every host and most hosts run no llama-server: the rest is loaded only when one does.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def is_llama_server(name):
    return name == 'llama-server' or name.startswith('llama-server.')


def processes(ctx):
    """Running llama-server processes (read once per audit run)."""
    return ctx.processes('llama-server', is_llama_server)


def process_table_evidence(running, problems):
    """What every llama_* finding says of the process table: how many llama-server processes, and
    the /proc entries that could not be read."""
    evidence = {'llama_server_processes': len(running)}
    if problems:
        evidence['proc_problems'] = problems[:20]
    return evidence
