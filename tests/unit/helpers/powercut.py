"""Crash states of a recorded write, built the way ALICE does (Pillai et al., "All File Systems Are Not
Created Equal: On the Complexity of Crafting Crash-Consistent Applications", OSDI '14, section 4):
the file-system operations a fix makes are recorded (filewrite.TRACE), each is broken into the
writes the file system makes for it, and a crash after any operation may have persisted any set of
the writes not yet made durable by a completed fsync, as far as the file system's persistence model
allows. Each such state is materialised and checked.

Two persistence models, written down in docs/crash-safety.md with the kernel source they come from:

ext4 (data=ordered, the default; the root filesystem of a Pi and of the Linux hosts): metadata
operations (create, mkdir, rename, exchange, unlink, link) are journalled, each atomic, and reach
the disk in the order they were made (jbd2 commits transactions in order), so the persisted ones are
a prefix; an fsync of a file or directory makes every metadata operation up to the last one that
touched it durable (ext4_sync_file commits the transaction holding the inode's last change) and the
file's data. File data not yet fsynced may be absent, torn (a prefix of it) or complete, whatever
metadata persisted.

vfat (Linux fs/fat; a Pi's /boot/firmware): no journal, so each directory-entry write, FAT-table
write and data write is a separate sector write that reaches the card in any order until an fsync
covers it. Which fsync covers which write is read from the kernel: fat_file_fsync (fs/fat/file.c)
= __generic_file_fsync (the file's data and its inode, i.e. its directory entry, written by
__fat_write_inode; and the buffers marked dirty for it: for a directory, the entries added and
removed in it, fs/fat/dir.c fat_remove_entries / fat_add_entries) + every FAT-table buffer
(sync_mapping_buffers on the FAT inode). A rename over an existing name rewrites that name's entry to
point at the moved file's clusters only when the moved inode is written back (vfat_rename attaches
the inode to the target's position and marks it dirty: fs/fat/namei_vfat.c), and marks the old
entries deleted in the source directory: two writes, in any order. A rename to a new name first adds
an entry pointing nowhere (vfat_add_entry with cluster 0). A file's clusters are freed when its inode
is evicted (fat_evict_inode, fs/fat/inode.c): at the last close. Each sector write is atomic.
"""
import itertools
import os
import random

UNWRITTEN = 'clusters never written'
UNALLOCATED = 'clusters free in the FAT'
TORN = 'partly written'


class Effect(object):
    """One write the file system makes: ``tag`` says which fsync covers it."""
    __slots__ = ('kind', 'tag', 'args', 'index')

    def __init__(self, kind, tag, args, index):
        self.kind, self.tag, self.args, self.index = kind, tag, args, index


def _parent(path):
    return os.path.dirname(path.rstrip('/'))


# --- ext4 ------------------------------------------------------------------------------------------

class Ext4(object):
    """The ext4 data=ordered model. The namespace is a dict path -> ('d',) or ('f', inode)."""
    name = 'ext4'

    def __init__(self, files, dirs):
        self.inodes = {}
        self.ns = {}
        self.next_ino = 1
        for d in dirs:
            self.ns[d] = ('d',)
        for path, data in files.items():
            ino = self._new_inode(data)
            self.ns[path] = ('f', ino)
        self.disk_ns = dict(self.ns)
        self.disk_data = dict(self.inodes)
        self.effects = []
        self.last_meta_for = {}

    def _new_inode(self, data=b''):
        ino = self.next_ino
        self.next_ino += 1
        self.inodes[ino] = data
        return ino

    def _meta(self, change, touched):
        effect = Effect('meta', None, change, len(self.effects))
        self.effects.append(effect)
        for key in touched:
            self.last_meta_for[key] = effect.index

    @staticmethod
    def _move(ns, source, dest):
        moved = dict((p, v) for p, v in ns.items() if p == source or p.startswith(source + '/'))
        for path in moved:
            del ns[path]
        for path in [p for p in ns if p == dest or p.startswith(dest + '/')]:
            del ns[path]
        for path, value in moved.items():
            ns[dest + path[len(source):]] = value

    @staticmethod
    def _swap(ns, first, second):
        a = dict((p, v) for p, v in ns.items() if p == first or p.startswith(first + '/'))
        b = dict((p, v) for p, v in ns.items() if p == second or p.startswith(second + '/'))
        for path in list(a) + list(b):
            del ns[path]
        for path, value in a.items():
            ns[second + path[len(first):]] = value
        for path, value in b.items():
            ns[first + path[len(second):]] = value

    def apply(self, step):
        """The effects of one recorded step; returns the indices it makes durable (fsync)."""
        op = step[0]
        if op == 'mkdir':
            path = step[1]
            self.ns[path] = ('d',)
            self._meta(lambda ns, p=path: ns.__setitem__(p, ('d',)), [path, _parent(path)])
        elif op == 'create':
            path = step[1]
            ino = self._new_inode()
            self.ns[path] = ('f', ino)
            self._meta(lambda ns, p=path, i=ino: ns.__setitem__(p, ('f', i)), [path, ('i', ino), _parent(path)])
        elif op == 'write':
            ino = self.ns[step[1]][1]
            self.inodes[ino] = step[2]
            self.effects.append(Effect('data', ino, step[2], len(self.effects)))
        elif op in ('rename', 'exchange'):
            source, dest = step[1], step[2]
            change = self._move if op == 'rename' else self._swap
            change(self.ns, source, dest)
            touched = [source, dest, _parent(source), _parent(dest)]
            touched += [('i', v[1]) for p, v in self.ns.items() if v[0] == 'f' and (p == dest or p == source)]
            self._meta(lambda ns, s=source, d=dest, c=change: c(ns, s, d), touched)
        elif op in ('unlink', 'rmdir', 'rmtree'):
            path = step[1]
            gone = [p for p in self.ns if p == path or p.startswith(path + '/')]
            for p in gone:
                del self.ns[p]
            self._meta(lambda ns, g=tuple(gone): [ns.pop(p, None) for p in g], [path, _parent(path)])
        elif op in ('link', 'symlink'):
            source, dest = (step[1], step[2]) if op == 'link' else (None, step[1])
            value = self.ns[source] if source else ('f', self._new_inode(b'<symlink>'))
            self.ns[dest] = value
            self._meta(lambda ns, d=dest, v=value: ns.__setitem__(d, v), [dest, _parent(dest)])
        elif op in ('fsync', 'fsync_dir'):
            path = step[1]
            value = self.ns.get(path)
            keys = [path] + ([('i', value[1])] if value and value[0] == 'f' else [])
            last = max([self.last_meta_for.get(k, -1) for k in keys])
            durable = [e.index for e in self.effects if e.kind == 'meta' and e.index <= last]
            if value and value[0] == 'f':
                durable += [e.index for e in self.effects if e.kind == 'data' and e.tag == value[1]]
            return durable
        # hold, release, external: nothing reaches the disk.
        return []

    def states(self, durable):
        """Every crash state allowed with ``durable`` (indices) made durable: (description, view)."""
        metas = [e for e in self.effects if e.kind == 'meta']
        datas = [e for e in self.effects if e.kind == 'data']
        first = max([i + 1 for i, e in enumerate(metas) if e.index in durable] or [0])
        pending_data = [e for e in datas if e.index not in durable]
        for k in range(first, len(metas) + 1):
            for choice in itertools.product(('none', 'torn', 'full'), repeat=len(pending_data)):
                ns = dict(self.disk_ns)
                for effect in metas[:k]:
                    effect.args(ns)
                data = dict(self.disk_data)
                chosen = dict((e.index, c) for e, c in zip(pending_data, choice))
                for effect in datas:
                    how = 'full' if effect.index in durable else chosen[effect.index]
                    if how == 'full':
                        data[effect.tag] = effect.args
                    elif how == 'torn' and len(effect.args) > 1:
                        data[effect.tag] = TORN
                view = {}
                for path, value in ns.items():
                    view[path] = ('dir', None) if value[0] == 'd' else (data.get(value[1], b''), None)
                yield ('%d of %d metadata operations, data %s' % (k, len(metas), ','.join(choice) or '-'), view)


# --- vfat --------------------------------------------------------------------------------------------

class Vfat(object):
    """The vfat model: directory entries (slots) and cluster chains, each write tagged with the fsync
    that covers it: ('dir', path) for entries added and removed in a directory, ('inode', n) for a
    file's data and its entry's start cluster and size, ('fat',) for the FAT table."""
    name = 'vfat'

    def __init__(self, files, dirs):
        self.slots = {}
        self.chains = {}
        self.effects = []
        self.inodes = {}
        self.path_ino = {}
        self.counter = itertools.count(1)
        self.disk_slots = {}
        self.disk_chains = {}
        self.held = {}
        self.roots = set(d for d in dirs if _parent(d) not in dirs)
        for d in sorted(dirs):
            if _parent(d) in dirs:
                self._initial(d, None, True)
        for path, data in files.items():
            self._initial(path, data, False)

    def _initial(self, path, data, is_dir):
        chain = next(self.counter)
        self.disk_chains[chain] = {'alloc': True, 'data': b'' if is_dir else data}
        slot = next(self.counter)
        self.disk_slots[slot] = {'dir': _parent(path), 'name': os.path.basename(path), 'live': True, 'chain': chain,
                                 'size': len(data or b''), 'is_dir': is_dir}
        ino = next(self.counter)
        self.inodes[ino] = {'slot': slot, 'chain': chain, 'nlink': 1, 'holds': 0, 'is_dir': is_dir,
                            'size': len(data or b'')}
        self.path_ino[path] = ino

    def _effect(self, kind, tag, **args):
        self.effects.append(Effect(kind, tag, args, len(self.effects)))

    def _add_slot(self, path, chain, size, is_dir):
        slot = next(self.counter)
        fields = {'dir': _parent(path), 'name': os.path.basename(path), 'live': True, 'chain': chain, 'size': size,
                  'is_dir': is_dir}
        self._effect('slot', ('dir', _parent(path)), slot=slot, fields=fields)
        return slot

    def _drop(self, ino):
        """The inode lost a name: its clusters are freed at eviction (no name and no holder)."""
        node = self.inodes[ino]
        node['nlink'] -= 1
        if node['nlink'] == 0 and node['holds'] == 0 and node['chain'] is not None:
            self._effect('fat', ('fat',), chain=node['chain'], alloc=False)

    def apply(self, step):
        op = step[0]
        if op == 'mkdir':
            path = step[1]
            chain = next(self.counter)
            self._effect('fat', ('fat',), chain=chain, alloc=True)
            # fat_alloc_new_dir zeroes the new cluster through buffers marked dirty for the parent.
            self._effect('chain', ('dir', _parent(path)), chain=chain, data=b'')
            slot = self._add_slot(path, chain, 0, True)
            ino = next(self.counter)
            self.inodes[ino] = {'slot': slot, 'chain': chain, 'nlink': 1, 'holds': 0, 'is_dir': True, 'size': 0}
            self.path_ino[path] = ino
        elif op == 'create':
            path = step[1]
            slot = self._add_slot(path, None, 0, False)
            ino = next(self.counter)
            self.inodes[ino] = {'slot': slot, 'chain': None, 'nlink': 1, 'holds': 0, 'is_dir': False, 'size': 0}
            self.path_ino[path] = ino
        elif op == 'write':
            ino = self.path_ino[step[1]]
            node = self.inodes[ino]
            chain = next(self.counter)
            self._effect('fat', ('fat',), chain=chain, alloc=True)
            self._effect('chain', ('inode', ino), chain=chain, data=step[2])
            self._effect('slot', ('inode', ino), slot=node['slot'], fields={'chain': chain, 'size': len(step[2])})
            node['chain'], node['size'] = chain, len(step[2])
        elif op == 'rename':
            source, dest = step[1], step[2]
            ino = self.path_ino.pop(source)
            node = self.inodes[ino]
            old_slot = node['slot']
            if dest in self.path_ino:
                victim = self.path_ino[dest]
                slot = self.inodes[victim]['slot']
                self.inodes[victim]['slot'] = None
                self._drop(victim)
            else:
                slot = self._add_slot(dest, None, 0, node['is_dir'])
            node['slot'] = slot
            self.path_ino[dest] = ino
            # The moved inode's fields reach the target's entry only when the inode is written back.
            self._effect('slot', ('inode', ino), slot=slot, fields={'chain': node['chain'], 'size': self._size(ino)})
            self._effect('slot', ('dir', _parent(source)), slot=old_slot, fields={'live': False})
        elif op in ('unlink', 'rmdir'):
            ino = self.path_ino.pop(step[1])
            self._effect('slot', ('dir', _parent(step[1])), slot=self.inodes[ino]['slot'], fields={'live': False})
            self._drop(ino)
        elif op == 'hold':
            ino = self.path_ino[step[1]]
            self.inodes[ino]['holds'] += 1
            self.held.setdefault(step[1], []).append(ino)
        elif op == 'release':
            node = self.inodes[self.held[step[1]].pop()]
            node['holds'] -= 1
            if node['holds'] == 0 and node['nlink'] == 0 and node['chain'] is not None:
                self._effect('fat', ('fat',), chain=node['chain'], alloc=False)
        elif op in ('fsync', 'fsync_dir'):
            covers = [('fat',)]
            ino = self.path_ino.get(step[1])
            if ino is not None:
                covers.append(('inode', ino))
            if op == 'fsync_dir':
                covers.append(('dir', step[1]))
            return [e.index for e in self.effects if e.tag in covers]
        elif op in ('exchange', 'link', 'symlink', 'rmtree'):
            raise ValueError('the vfat model has no %s (no fix writes one on FAT)' % op)
        return []

    def _size(self, ino):
        return self.inodes[ino]['size']

    def states(self, durable):
        pending = [e for e in self.effects if e.index not in durable]
        for mask in itertools.product((False, True), repeat=len(pending)):
            kept = set(e.index for e, keep in zip(pending, mask) if keep) | set(durable)
            slots = dict((k, dict(v)) for k, v in self.disk_slots.items())
            chains = dict((k, dict(v)) for k, v in self.disk_chains.items())
            for effect in self.effects:
                if effect.index not in kept:
                    continue
                if effect.kind == 'slot':
                    slots.setdefault(effect.args['slot'], {'live': False}).update(effect.args['fields'])
                elif effect.kind == 'fat':
                    chains.setdefault(effect.args['chain'], {'data': None})['alloc'] = effect.args['alloc']
                elif effect.kind == 'chain':
                    chains.setdefault(effect.args['chain'], {'alloc': False})['data'] = effect.args['data']
            yield ('%d of %d pending writes' % (sum(mask), len(pending)), self._view(slots, chains))

    def _view(self, slots, chains):
        """path -> (content or a reason it cannot be read, the chain) for every entry reachable from the
        filesystem's root directory."""
        view, reachable = {}, set(self.roots)
        live = [s for s in slots.values() if s.get('live') and 'name' in s]
        changed = True
        while changed:
            changed = False
            for s in live:
                path = os.path.join(s['dir'], s['name'])
                if s['is_dir'] and s['dir'] in reachable and path not in reachable:
                    chain = chains.get(s['chain'], {})
                    if chain.get('alloc') and chain.get('data') is not None:
                        reachable.add(path)
                        changed = True
        for s in live:
            if s['dir'] not in reachable:
                continue
            path = os.path.join(s['dir'], s['name'])
            if s['is_dir']:
                view[path] = ('dir', s['chain'])
                continue
            chain = chains.get(s['chain'], {})
            if s['chain'] is None:
                content = b'' if not s['size'] else UNALLOCATED
            elif not chain.get('alloc'):
                content = UNALLOCATED
            elif chain.get('data') is None:
                content = UNWRITTEN
            else:
                content = chain['data'][:s['size']]
            view[path] = (content, s['chain'])
        return view


MODELS = {'ext4': Ext4, 'vfat': Vfat}


# --- building and checking ------------------------------------------------------------------------------

class Target(object):
    """A file the fix changes: ``old`` (None: created) and ``new`` (None: removed), bytes, or for a
    directory a dict name -> bytes; ``backup``: a complete <path>.<stamp>.bak must be there once it is new."""

    def __init__(self, path, old, new, backup=True, may_be_empty=False):
        self.path, self.old, self.new, self.backup = path, old, new, backup
        # A file created new on FAT: the name is added with no cluster first (vfat_add_entry(..., 0, ...)),
        # so no sequence creates a name without an empty state. Allowed only where the caller says so.
        self.may_be_empty = may_be_empty


def crash_states(model_name, files, dirs, trace, limit=None, seed=0):
    """Every crash state of ``trace`` on a disk that held ``files`` (path -> bytes) and ``dirs``:
    yields (crash point, description, view). ``limit``: at most that many per crash point, sampled."""
    model = MODELS[model_name](files, dirs)
    durable = set()
    rng = random.Random(seed)
    for point in range(len(trace) + 1):
        states = list(model.states(durable))
        if limit and len(states) > limit:
            states = rng.sample(states, limit)
        for description, view in states:
            yield point, description, view
        if point < len(trace):
            durable |= set(model.apply(trace[point]))


def check_state(view, targets, fat=False):
    """Problems of one crash state (empty when every target is old or new, and its backup is there once
    it changed); ``repaired``: problems fsck.fat repairs in the target's favour (dosfstools check.c:
    a directory's files are checked before its subdirectories' and the second owner of a shared cluster
    is truncated), listed apart."""
    problems, repaired = [], []
    owners = {}
    for path, (content, chain) in view.items():
        if chain is not None and content != 'dir':
            owners.setdefault(chain, []).append(path)
    for target in targets:
        seen = view.get(target.path)
        content = seen[0] if seen else None
        if seen is None:
            if target.old is not None and target.new is not None:
                problems.append('%s is missing' % target.path)
            continue
        if content == b'' and target.old is None and target.may_be_empty:
            continue
        if seen is not None and content not in (target.old, target.new):
            what = content if isinstance(content, str) else ('empty' if content == b'' else 'neither old nor new (%d bytes)' % len(content))
            problems.append('%s is %s' % (target.path, what))
            continue
        if seen is not None and fat:
            sharing = [p for p in owners.get(seen[1], []) if p != target.path]
            for other in sharing:
                if other.startswith(_parent(target.path) + '/') and '/' in other[len(_parent(target.path)) + 1:]:
                    repaired.append('%s shares its clusters with %s (fsck.fat truncates the latter)' % (target.path, other))
                else:
                    problems.append('%s shares its clusters with %s' % (target.path, other))
        if target.old is not None and target.backup and content == target.new and target.new != target.old:
            prefix = target.path + '.'
            if not any(p.startswith(prefix) and p.endswith('.bak') and (v[0] == target.old or _tree_matches(view, p, target))
                       for p, v in view.items()):
                problems.append('%s changed but no complete backup of it is there' % target.path)
    return problems, repaired


def _tree_matches(view, backup, target):
    """A directory backup (the vLLM fold): every file of the old tree is there with its old content."""
    if not isinstance(target.old, dict) or view.get(backup, (None,))[0] != 'dir':
        return False
    return all(view.get(os.path.join(backup, name), (None,))[0] == data for name, data in target.old.items())


def check_trace(model_name, files, dirs, trace, targets, limit=None):
    """Counts over every crash state: checked, repaired by fsck, and the first problems found."""
    fat = model_name == 'vfat'
    checked, repaired, failures = 0, 0, []
    for point, description, view in crash_states(model_name, files, dirs, trace, limit):
        checked += 1
        problems, fixed = check_state(_with_trees(view, targets), targets, fat)
        if problems:
            failures.append((point, trace[point - 1] if point else None, description, problems))
        elif fixed:
            repaired += 1
    return {'checked': checked, 'repaired_by_fsck': repaired, 'failures': failures}


def _with_trees(view, targets):
    """Directory targets (the vLLM fold) read as one value: a dict name -> content of their files."""
    view = dict(view)
    for target in targets:
        if isinstance(target.new, dict) or isinstance(target.old, dict):
            if view.get(target.path, (None,))[0] == 'dir':
                prefix = target.path + '/'
                view[target.path] = (dict((p[len(prefix):], v[0]) for p, v in view.items()
                                          if p.startswith(prefix) and v[0] != 'dir'), None)
    return view
