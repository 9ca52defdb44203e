"""Checks that a crate's files import only the modules its lib.rs puts
below them.

The order is the one lib.rs's `//!` docs state: a list, one line a layer,
each line opening with the modules it places, linked and comma-separated
before its colon:

    //! Bottom up; each folder imports only those above it in this list.
    //! - [`config`]: the environment, checked before start;
    //! - [`book`], [`hints`]: the working set of plans; ...
    //! - [`start`]: the services built from the config.

"Bottom up" (or "top down") in the docs says which end of the list is the
bottom; a list saying neither is refused, not guessed. Modules on one line
are one layer and may import each other. A name on the list that is not a
module of lib.rs's but an item lib.rs defines (`start` above) places lib.rs
itself; without one, lib.rs is the top layer. A module of lib.rs the list
leaves out is an error: its imports cannot be judged.

Every `use crate::..` (grouped, aliased, globbed) and every `crate::` /
`super::` path in code is resolved to the file that defines the name,
through re-exports, the way scripts/import_loops.py resolves them (its
`imports` does it here), and a file whose top-level module lies below the
defining file's is reported. Imports inside one top-level module are not
this check's business (import_loops.py looks at those). Left out as there:
comments, test modules, main.rs and src/bin/.

Besides the imports that point up, the report names each circle of
top-level modules (folders that import each other through any of their
files). import_loops.py sees loops of files only, and none where the two
folders meet in different files: runs/mod.rs names templates/mod.rs's
`TemplateStore`; templates/mod.rs names `crate::runs::RunStore`, which it
resolves to runs/store.rs, the file defining it (runs/mod.rs only
re-exports it), and runs/store.rs names nothing in templates/. A file's
edges to its own ancestors are no edges there, so the circle closes for
no two files.

Usage: python3 scripts/layers.py server/src [other/src ...]
       python3 scripts/layers.py --self-test
Exits 1, listing each import that points up (file:line, the path as
written, the file defining it), when there is one, or when the order is
missing, ambiguous or leaves a module out.
"""
import collections
import os
import re
import sys

sys.dont_write_bytecode = True  # no scripts/__pycache__ from the import below
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import import_loops  # noqa: E402

BULLET = re.compile(r'^-\s+((?:\[`\w+`\]\s*,?\s*)+):')
NAME = re.compile(r'\[`(\w+)`\]')
MOD = re.compile(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;', re.M)


class OrderError(Exception):
    pass


def stated_order(lib_text):
    """The layers lib.rs's docs state, bottom first: a list of lists of names."""
    docs = []
    for line in lib_text.splitlines():
        s = line.strip()
        if s.startswith('//!'):
            docs.append(s[3:][1:] if s[3:].startswith(' ') else s[3:])
        elif s and docs:
            break
    if not docs:
        raise OrderError('lib.rs has no //! docs to state an order')
    text = '\n'.join(docs)
    bottom_up = re.search(r'\bbottom[\s-]+up\b', text, re.I)
    top_down = re.search(r'\btop[\s-]+down\b', text, re.I)
    if bool(bottom_up) == bool(top_down):
        raise OrderError('lib.rs\'s docs say neither "bottom up" nor "top down" '
                         '(or both), so which end of its list is the bottom is not stated')
    bullets = []
    for line in docs:
        if line.startswith('- '):
            bullets.append(line)
        elif bullets and line.startswith(' ') and line.strip():
            bullets[-1] += ' ' + line.strip()
        elif bullets and not line.strip():
            break  # the list ended
    layers = []
    for b in bullets:
        m = BULLET.match(b)
        if m:
            layers.append(NAME.findall(m.group(1)))
    if not layers:
        raise OrderError('lib.rs\'s docs hold no list of [`module`] lines')
    return layers if bottom_up else layers[::-1]


def file_of(root, mod):
    """The path of module `mod`'s file ('' is lib.rs) under `root`."""
    if mod == '':
        rel = 'lib.rs'
    else:
        base = mod.replace('::', '/')
        rel = base + '.rs' if os.path.exists(os.path.join(root, base + '.rs')) else base + '/mod.rs'
    return os.path.join(root, rel)


def check(root, out=sys.stdout):
    """Prints what breaks `root`'s stated order; returns the number of problems."""
    with open(os.path.join(root, 'lib.rs'), encoding='utf-8') as fh:
        lib = fh.read()
    try:
        layers = stated_order(lib)
    except OrderError as e:
        print(f'{root}/lib.rs: {e}', file=out)
        return 1
    modules, found = import_loops.imports(root)
    top_mods = {m for m in modules if m and '::' not in m}
    code = import_loops.blank(lib)
    declared = set(MOD.findall(code))
    own = {a or b for a, b in import_loops.DEF.findall(code)}
    problems = 0
    tier, root_tier = {}, None
    for i, names in enumerate(layers):
        for n in names:
            if n in top_mods or n in declared:
                if n in tier:
                    print(f'{root}/lib.rs: `{n}` is placed twice in the order', file=out)
                    problems += 1
                tier[n] = i
            elif n in own:
                if root_tier is None:
                    root_tier = i  # an item of lib.rs's own: lib.rs's place
            else:
                print(f'{root}/lib.rs: the order names `{n}`, neither a module nor an '
                      'item of lib.rs', file=out)
                problems += 1
    for n in sorted(top_mods - set(tier)):
        print(f'{root}/lib.rs: module `{n}` is not placed in the stated order', file=out)
        problems += 1
    tier[''] = len(layers) if root_tier is None else root_tier

    def top(m):
        return m.split('::')[0]

    ups = collections.defaultdict(list)
    graph = collections.defaultdict(set)
    for m, t, text, line in found:
        a, b = top(m), top(t)
        if a == b or a not in tier or b not in tier:
            continue
        if a and b:
            graph[a].add(b)  # lib.rs names everything (its re-exports): in no circle
        if tier[b] > tier[a]:
            ups[(a, b)].append((file_of(root, m), line, text, file_of(root, t)))

    def name(mod):
        return mod or 'lib.rs'

    for (a, b), sites in sorted(ups.items(), key=lambda kv: (tier[kv[0][0]], kv[0])):
        print(f'{root}: {name(a)} (layer {tier[a] + 1}) imports {name(b)} '
              f'(layer {tier[b] + 1}), above it:', file=out)
        seen = set()
        for f, line, text, target in sites:
            if (f, line, text) in seen:
                continue
            seen.add((f, line, text))
            print(f'    {f}:{line}: {text} (defined in {target})', file=out)
        problems += 1

    # Circles of top-level modules (strongly connected groups).
    idx, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        idx[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in idx:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    for v in sorted(graph):
        if v not in idx:
            strong(v)
    for comp in sorted(sorted(c, key=lambda m: (tier[m], m)) for c in comps if len(c) > 1):
        pairs = [f'{a} <-> {b}' for i, a in enumerate(comp) for b in comp[i + 1:]
                 if b in graph[a] and a in graph[b]]
        print(f'{root}: circle of folders importing each other: {", ".join(comp)}'
              + (f' (both ways: {"; ".join(pairs)})' if pairs else ''), file=out)
        seen = set()
        for a in comp:
            for m, t, text, line in found:
                if top(m) == a and top(t) in comp and top(t) != a and (m, line, text) not in seen:
                    seen.add((m, line, text))
                    print(f'    {file_of(root, m)}:{line}: {text} -> {file_of(root, t)}', file=out)
    return problems


def self_test():
    """A tiny crate in memory (written to a temporary folder): imports down
    the order pass; one up it, named through a re-export, is caught, and so
    is the circle it closes, which import_loops.py does not see; the order's
    direction is read, not guessed; a module left out of it and a name the
    crate lacks are reported."""
    import io
    import tempfile

    lib = ('//! A crate.\n//!\n//! # Layout\n//! Bottom up; each folder imports only those above it.\n'
           '//! - [`low`]: the floor;\n//! - [`mid`], [`side`]: the middle, two of them;\n'
           '//! - [`high`]: the top, which may\n//!   use anything;\n//! - [`start`]: lib.rs.\n\n'
           'pub mod high;\npub mod low;\npub mod mid;\npub mod side;\n'
           'pub fn start() {}\n')
    fine = {
        'lib.rs': lib,
        'low.rs': 'pub struct L;\n// crate::high::H in a comment is no import\n',
        'mid/mod.rs': 'pub mod inner;\npub use inner::M;\nuse crate::low::L;\n',
        'mid/inner.rs': 'pub struct M(crate::low::L);\n',
        'side.rs': 'pub struct S(crate::mid::M);\n',
        'high.rs': 'pub struct H(crate::mid::M, crate::side::S);\n',
    }

    def run(name, changes, want, needles=(), file_loops=None):
        with tempfile.TemporaryDirectory() as d:
            for path, text in dict(fine, **changes).items():
                os.makedirs(os.path.dirname(os.path.join(d, path)), exist_ok=True)
                with open(os.path.join(d, path), 'w') as fh:
                    fh.write(text)
            out = io.StringIO()
            got = check(d, out)
            text = out.getvalue()
            if got != want or any(n not in text for n in needles):
                sys.exit(f'layers self-test: {name}: {got} problems, want {want}; '
                         f'wanted {needles} in:\n{text}')
            if file_loops is not None and import_loops.loops(d, True, io.StringIO()) != file_loops:
                sys.exit(f'layers self-test: {name}: import_loops.py does not find '
                         f'{file_loops} loops')

    run('imports down the order pass', {}, 0)
    # low names mid's M through mid/mod.rs's re-export: defined in
    # mid/inner.rs, still above low. With mid/mod.rs -> low, the two
    # folders import each other, though no two files do (runs and
    # templates in server/src): import_loops.py sees no loop.
    run('an import up the order is caught',
        {'low.rs': 'pub struct L;\npub fn f(_: crate::mid::M) {}\n', 'mid/inner.rs': 'pub struct M;\n'},
        1, ('low (layer 1) imports mid (layer 2)', 'low.rs:2: crate::mid::M (defined in',
            'mid/inner.rs', 'circle of folders importing each other: low, mid (both ways: low <-> mid)'),
        file_loops=0)
    # Read top down, the same list makes `high` the floor: every import points up.
    run('the list read top down', {'lib.rs': lib.replace('Bottom up', 'Top down')}, 3,
        ('high (layer 2) imports mid (layer 3)', 'mid (layer 3) imports low (layer 4)'))
    run('an order that does not say its direction',
        {'lib.rs': lib.replace('Bottom up', 'In this order')}, 1,
        ('neither "bottom up" nor "top down"',))
    run('a module left out of the order',
        {'lib.rs': lib.replace('pub mod side;', 'pub mod side;\npub mod other;'),
         'other.rs': 'pub struct O;\n'}, 1, ('module `other` is not placed',))
    run('a name the crate lacks', {'lib.rs': lib.replace('[`start`]', '[`strat`]')}, 1,
        ('names `strat`, neither a module',))
    print('layers self-test: ok')


if __name__ == '__main__':
    if sys.argv[1:] == ['--self-test']:
        self_test()
        sys.exit(0)
    if not sys.argv[1:]:
        sys.exit(__doc__)
    bad = sum(check(r.rstrip('/')) for r in sys.argv[1:])
    sys.exit(1 if bad else 0)
