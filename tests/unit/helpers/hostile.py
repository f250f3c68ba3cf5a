"""What a detection may not change: a tree's contents, compared before and after."""
import hashlib
import os


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
