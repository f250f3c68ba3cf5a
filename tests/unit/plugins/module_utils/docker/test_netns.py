"""docker/netns.py: sandbox names across epochs (osl.GenerateKey: ``<epoch>-<network id>`` cut to 12
characters) and link flags read per MAC from ``ip -o link show`` inside a container's namespace."""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import netns

NET_ID = 'ak7of1jriprxzfppltmyzgkiw'


@pytest.mark.parametrize('names,expected', [
    (['1-ak7of1jrip'], ['1-ak7of1jrip']),
    (['2-ak7of1jrip'], ['2-ak7of1jrip']),            # rebuilt once in this daemon's lifetime
    (['10-ak7of1jri'], ['10-ak7of1jri']),            # the tenth: one id character less
    (['1-zzzzzzzzzz', 'ingress_sbox', 'lb_ak7of1jri'], []),
    (['1-ak7of1jri'], []),                           # too short for epoch 1: another network's prefix
])
def test_sandbox_names_match_any_epoch(tmp_path, names, expected):
    for name in names:
        (tmp_path / name).write_text('')
    found, problem = netns.sandbox_files(str(tmp_path), NET_ID)
    assert problem is None
    assert [os.path.basename(p) for p in found] == expected


def test_sandbox_dir_missing_says_why(tmp_path):
    assert netns.sandbox_files(str(tmp_path / 'nope'), NET_ID) == (None, '%s does not exist' % (tmp_path / 'nope'))


IP_LINK = ('1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000'
           '\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n'
           '24: eth0@if25: <NO-CARRIER,BROADCAST,MULTICAST,UP,M-DOWN> mtu 1450 qdisc noqueue state DOWN mode DEFAULT '
           'group default \\    link/ether 02:42:0a:00:01:02 brd ff:ff:ff:ff:ff:ff link-netnsid 0\n'
           '26: eth1@if27: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default '
           '\\    link/ether 02:42:ac:12:00:03 brd ff:ff:ff:ff:ff:ff link-netnsid 1\n')


def test_link_flags_are_read_per_mac():
    ctx = AuditContext(run_command=lambda cmd: (0, IP_LINK, ''), which=lambda name: '/usr/bin/' + name)
    links, problem = netns.read_links(ctx, 4242)
    assert problem is None
    assert links['02:42:0a:00:01:02'] == ('eth0', ['NO-CARRIER', 'BROADCAST', 'MULTICAST', 'UP', 'M-DOWN'], 'DOWN')
    assert 'LOWER_UP' in links['02:42:ac:12:00:03'][1]
