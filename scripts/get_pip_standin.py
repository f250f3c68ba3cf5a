"""Stand-in for pypa's get-pip.py, for ansible-test's virtualenv bootstrap.

ansible-test downloads get-pip.py from a host these machines cannot reach and
runs it to put pip into each sanity virtualenv. This does the same job from
what is reachable: the interpreter's bundled ensurepip, then pip itself from
PyPI at the version ansible-test asked for (the arguments it passes through).
"""
import subprocess
import sys

subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'], stdout=subprocess.DEVNULL)
packages = [arg for arg in sys.argv[1:] if arg not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'pip', 'install', '-q'] + packages)
