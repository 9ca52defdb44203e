"""Finds loops of files importing each other in a crate's source folder.

Each .rs file is a module. An edge runs from a file to the file that
*defines* each item it names through `crate::`, `super::`, `self::` or a
relative path, in a `use` (grouped ones too: `use crate::{a::B, c::D}`)
or in its code. A loop is a strongly connected group of two or more files.

Names are followed through re-exports: `crate::Usd`, where lib.rs says
`pub use cost::Usd` (or `pub use self::cost::{Price, Usd as Money}`, or
`pub use cost::*`), is an edge to cost, not to lib.rs; chains of
re-exports are followed to the end. A name is looked up in a module in
this order: a module file of that name, an item the module defines, one
of its top-level `use` items (grouped, nested, aliased; private ones too,
which its own files see), then its globs. Inline `mod x { .. }` blocks
are namespaces of the file holding them. A name defined nowhere this
sees (made by a macro, or from another crate) stays with the module it
was named through.

Not edges:
- to a file's ancestors (a module's private helper files may lean on it:
  `use super::*`, `super::Thing` defined in the parent);
- to a file's descendants (a module uses and re-exports its own files;
  a loop from a mod.rs through its own file and back is not seen).
So lib.rs, the ancestor of every file, is in no edge: its `pub use` lines
and a mod.rs's re-exports of its own files only tell the check where a
name is defined. A `pub use` of something outside the module's own files
is an edge like any other use.

Left out: comments, `#[cfg(test)] mod x { .. }` blocks and the files of
`#[cfg(test)] mod x;`, and, next to a lib.rs, main.rs and src/bin/
(separate crates, which reach the library by its name).

Usage: python3 scripts/import_loops.py engine/src run-model/src ...
       python3 scripts/import_loops.py --self-test
Exits 1, listing each loop and the paths that make its edges, when there
is one.
"""
import bisect
import collections
import os
import re
import sys

IDENT = r'[A-Za-z_]\w*'
DEF = re.compile(
    r'\b(?:struct|enum|fn|trait|type|union|mod|macro_rules!)\s+(' + IDENT + ')'
    r'|\b(?:const|static)\s+(?:mut\s+)?(' + IDENT + r')\s*:')
USE = re.compile(r'(?<![\w$])use\s+([^;]*);')
PATH = re.compile(r'(?<![\w$:])(crate|super)((?:\s*::\s*' + IDENT + r')+)')
TEST_MOD = re.compile(
    r'#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(' + IDENT + r')\s*([;{])')
INLINE_MOD = re.compile(r'\bmod\s+(' + IDENT + r')\s*\{')
KEEP_IN_STRING = re.compile(r'\b(?:crate|super)(?:::' + IDENT + ')+')
RAW_STRING = re.compile(r'b?r(#*)"')
CHAR = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'")


def blank(src):
    """`src` with comments and the insides of string and char literals made
    spaces (newlines kept, so offsets hold), except `crate::a::B` paths in
    strings (serde's `skip_serializing_if = "crate::X::f"` names code)."""
    out = list(src)
    i, n = 0, len(src)

    def wipe(a, b, keep_paths=False):
        text = src[a:b]
        kept = [(m.start(), m.end()) for m in KEEP_IN_STRING.finditer(text)] if keep_paths else []
        for k in range(a, b):
            if src[k] != '\n' and not any(s <= k - a < e for s, e in kept):
                out[k] = ' '

    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif src.startswith('/*', i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith('/*', j):
                    depth, j = depth + 1, j + 2
                elif src.startswith('*/', j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif c in 'br' and (m := RAW_STRING.match(src, i)) and not (
                i and (src[i - 1].isalnum() or src[i - 1] == '_')):
            end = src.find('"' + m.group(1), m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            wipe(m.end(), end - 1 - len(m.group(1)), True)
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == '\\' else 1
            wipe(i + 1, j, True)
            i = j + 1
        elif c == "'" and (m := CHAR.match(src, i)):
            wipe(i + 1, m.end() - 1)
            i = m.end()
        else:
            i += 1
    return ''.join(out).replace('$crate', ' crate')


def close_of(code, open_at):
    """Offset of the brace closing the one at `open_at`."""
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == '{':
            depth += 1
        elif code[k] == '}':
            depth -= 1
            if depth == 0:
                return k
    return len(code)


def use_leaves(tree):
    """The leaves of a use tree: (path segments, name bound or None, glob)."""
    toks = re.findall(r'::|[{},*]|' + IDENT, tree)
    leaves, pos = [], [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take():
        pos[0] += 1
        return toks[pos[0] - 1]

    def parse(prefix):
        segs = list(prefix)
        while True:
            t = peek()
            if t == '{':
                take()
                while peek() not in (None, '}'):
                    parse(segs)
                    if peek() == ',':
                        take()
                take()
                return
            if t == '*':
                take()
                leaves.append((segs, None, True))
                return
            if t is None or t in ('}', ','):
                return
            if t == '::':
                take()
                continue
            segs = segs + [take()]
            if peek() == '::':
                continue
            name = segs[-1]
            if peek() == 'as':
                take()
                name = take() if peek() not in (None, ',', '}') else None
            if segs[-1] == 'self':
                segs = segs[:-1]
                name = segs[-1] if segs and name == 'self' else name
            leaves.append((segs, None if name == '_' else name, False))
            return

    if peek() == '::':
        return []  # `use ::name` is an extern crate
    parse([])
    return leaves


def join(ns, name):
    return ns + '::' + name if ns else name


def split(ns):
    return ns.split('::') if ns else []


def read_crate(root):
    """The crate under `root`: per namespace (file module or inline `mod`) its
    file, definitions, `use` bindings and globs, and per file its uses."""
    files = {}
    for dp, _, fs in os.walk(root):
        for f in fs:
            if f.endswith('.rs'):
                p = os.path.join(dp, f)
                rel = os.path.relpath(p, root)[:-3].replace(os.sep, '/')
                files[rel] = p
    has_lib = 'lib' in files
    modules = {}
    for rel, p in files.items():
        if has_lib and (rel == 'main' or rel.startswith('bin/')):
            continue
        if rel in ('lib', 'main'):
            mod = ''
        else:
            mod = (rel[:-4] if rel.endswith('/mod') else rel).replace('/', '::')
        with open(p, encoding='utf-8') as fh:
            modules[mod] = fh.read()

    owner, defs = {}, collections.defaultdict(set)
    binds = collections.defaultdict(lambda: collections.defaultdict(list))
    globs = collections.defaultdict(list)
    uses = collections.defaultdict(list)   # file -> [(segments, namespace, text, line)]
    tests = set()
    for mod, src in modules.items():
        code = blank(src)
        # Test modules: inline ones blanked, file ones dropped.
        for m in TEST_MOD.finditer(code):
            if m.group(2) == ';':
                tests.add(join(mod, m.group(1)))
        for m in reversed(list(TEST_MOD.finditer(code))):
            if m.group(2) == '{':
                end = close_of(code, m.end() - 1)
                code = code[:m.start()] + re.sub(r'[^\n]', ' ', code[m.start():end + 1]) + code[end + 1:]
        # Inline modules: their spans and names.
        spans = []
        for m in INLINE_MOD.finditer(code):
            spans.append((m.end() - 1, close_of(code, m.end() - 1), m.group(1)))
        depth, d = [0] * (len(code) + 1), 0
        for k, ch in enumerate(code):
            depth[k] = d
            d += (ch == '{') - (ch == '}')
        depth[len(code)] = d

        def ns_at(k):
            inner = [name for a, b, name in spans if a < k < b]
            return mod if not inner else mod + ('::' if mod else '') + '::'.join(inner), len(inner)

        starts = [k for k, ch in enumerate(code) if ch == '\n']

        def line_at(k):
            return bisect.bisect_left(starts, k) + 1

        owner[mod] = mod
        for a, b, name in spans:
            ns, _ = ns_at(a + 1)
            owner[ns] = mod
        for m in DEF.finditer(code):
            ns, level = ns_at(m.start())
            if depth[m.start()] == level:
                defs[ns].add(m.group(1) or m.group(2))
        for m in USE.finditer(code):
            ns, level = ns_at(m.start())
            for segs, name, glob in use_leaves(m.group(1)):
                if not segs:
                    continue
                uses[mod].append((segs, ns, '::'.join(segs) + ('::*' if glob else ''),
                                  line_at(m.start())))
                if depth[m.start()] == level:
                    if glob:
                        globs[ns].append((segs, ns))
                    elif name:
                        binds[ns][name].append((segs, ns))
        code = USE.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), code)
        for m in PATH.finditer(code):
            ns, _ = ns_at(m.start())
            segs = [m.group(1)] + re.findall(IDENT, m.group(2))
            uses[mod].append((segs, ns, '::'.join(segs), line_at(m.start())))
    for t in list(tests):
        for mod in list(modules):
            if mod == t or mod.startswith(t + '::'):
                del modules[mod]
                uses.pop(mod, None)
    return modules, owner, defs, binds, globs, uses


def imports(root, follow=True):
    """The crate under `root` and every use in it of an item of its own:
    (modules, [(file, defining file, path as written, line)]), files named
    by module path ('' for lib.rs), in the order the files name them. A
    name is resolved to the file defining it, through re-exports; with
    `follow=False` to the module it is named through, the way the check
    worked before it followed re-exports. Extern crates, the prelude and a
    file naming its own items are left out."""
    modules, owner, defs, binds, globs, uses = read_crate(root)
    limit = 40

    def absolute(segs, ns, depth):
        """`segs` as written in namespace `ns`, from the crate root; None for
        an extern crate or the prelude."""
        if depth > limit or not segs:
            return None
        first = segs[0]
        if first == 'crate':
            return segs[1:]
        if first in ('self', 'super'):
            base = split(ns)
            rest = segs
            while rest and rest[0] in ('self', 'super'):
                if rest[0] == 'super':
                    base = base[:-1]
                rest = rest[1:]
            return base + rest
        if join(ns, first) in owner or first in defs[ns]:
            return split(ns) + segs
        if follow and first in binds[ns]:
            for target, where in binds[ns][first]:
                if target != segs:
                    a = absolute(target, where, depth + 1)
                    if a is not None:
                        return a + segs[1:]
        return None

    def has(ns, name, depth):
        if depth > limit:
            return False
        if name in defs[ns] or name in binds[ns] or join(ns, name) in owner:
            return True
        for g, where in globs[ns]:
            a = absolute(g, where, depth + 1)
            if a is not None and has(resolve(a, depth + 1), name, depth + 1):
                return True
        return False

    def resolve(segs, depth=0):
        """The namespace defining what the absolute path `segs` names."""
        cur = ''
        for i, s in enumerate(segs):
            if join(cur, s) in owner:
                cur = join(cur, s)
                continue
            if not follow or depth > limit or s in defs[cur]:
                return cur
            for target, where in binds[cur].get(s, []):
                a = absolute(target, where, depth + 1)
                if a is not None:
                    return resolve(a + segs[i + 1:], depth + 1)
            for g, where in globs[cur]:
                a = absolute(g, where, depth + 1)
                if a is not None:
                    gns = resolve(a, depth + 1)
                    if gns != cur and has(gns, s, depth + 1):
                        return resolve(split(gns) + segs[i:], depth + 1)
            return cur
        return cur

    found = []
    for m in modules:
        for segs, ns, text, line in uses[m]:
            a = absolute(segs, ns, 0)
            if a is None:
                continue
            t = owner.get(resolve(a), '')
            if t in modules and t != m:
                found.append((m, t, text, line))
    return modules, found


def loops(root, follow=True, out=sys.stdout):
    """Prints the loops of files importing each other under `root`; returns
    their number. `follow=False` resolves a name to the module it is named
    through, the way the check worked before it followed re-exports."""
    modules, found = imports(root, follow)

    def related(a, b):
        return a == b or a == '' or b == '' or a.startswith(b + '::') or b.startswith(a + '::')

    edges = collections.defaultdict(lambda: collections.defaultdict(list))
    for m, t, text, _ in found:
        if not related(m, t) and text not in edges[m][t]:
            edges[m][t].append(text)

    idx, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        idx[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
            sccs.append(comp)

    for v in sorted(modules):
        if v not in idx:
            strong(v)
    found = sorted(sorted(c) for c in sccs if len(c) > 1)
    for comp in found:
        print(root + ':', len(comp), 'modules import each other:', comp, file=out)
        for a in comp:
            for b in sorted(edges[a]):
                if b in comp:
                    print('   ', a, '->', b, '(' + ', '.join(edges[a][b][:4]) + ')', file=out)
    return len(found)


def self_test():
    """Tiny fake crates: a loop through re-exports is found only when they
    are followed; what is not a loop stays quiet."""
    import io
    import tempfile

    def check(name, files, want_follow, want_plain):
        with tempfile.TemporaryDirectory() as d:
            for path, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(d, path)), exist_ok=True)
                with open(os.path.join(d, path), 'w') as fh:
                    fh.write(text)
            for follow, want in ((True, want_follow), (False, want_plain)):
                got = loops(d, follow, io.StringIO())
                if got != want:
                    sys.exit(f'import_loops self-test: {name}: {got} loops '
                             f'with follow={follow}, want {want}')

    lib = 'pub mod a;\npub mod b;\npub use a::A;\npub use self::b::{B, C as D, *};\n'
    b = 'pub struct B;\npub struct C;\npub struct E;\n'
    # a -> b only through lib.rs's re-export (aliased, in a group); b -> a
    # through a grouped `use crate::{..}`.
    check('loop through a re-export', {
        'lib.rs': lib,
        'a.rs': 'pub struct A;\npub fn f(_: crate::D) {}\n',
        'b.rs': 'use crate::{a::A, Other};\npub fn g(_: A) {}\n' + b,
    }, 1, 0)
    # The same through a glob re-export and `super::`.
    check('loop through a glob', {
        'lib.rs': lib,
        'a.rs': 'pub struct A;\npub fn f(_: super::E) {}\n',
        'b.rs': 'pub fn g(_: crate::a::A) {}\n' + b,
    }, 1, 0)
    # Re-exports chained through a mod.rs, in nested groups.
    check('loop through a chain', {
        'lib.rs': 'pub mod a;\npub mod m;\npub use m::{x::{X as Y}, Deep};\n',
        'm/mod.rs': 'pub mod inner;\npub mod x;\npub use inner::Deep;\n',
        'm/inner.rs': 'pub struct Deep(crate::a::A);\n',
        'm/x.rs': 'pub struct X;\n',
        'a.rs': 'pub struct A;\npub fn f(_: crate::Deep) {}\n',
    }, 1, 0)
    # Not loops: lib.rs re-exporting and holding a helper its files call; a
    # file leaning on its parent; a module using its own file; comments;
    # test modules.
    helper = 'pub fn helper() {}\npub fn other() { crate::a::f(); }\n'
    check('lib.rs is in no loop', {
        'lib.rs': lib + helper,
        'a.rs': 'pub struct A;\npub fn f() { crate::helper() }\n',
        'b.rs': b,
    }, 0, 0)
    two = 'pub mod a;\npub mod b;\npub use a::A;\npub use b::B;\n'
    check('a file leaning on its parent', {
        'lib.rs': two,
        'a.rs': 'pub struct A;\npub fn f() { crate::b::c::h() }\n',
        'b.rs': 'pub mod c;\npub struct B(crate::A);\n',
        'b/c.rs': 'use super::*;\npub fn h() { let _ = super::B; }\n',
    }, 0, 0)
    check('a module using its own file', {
        'lib.rs': two,
        'a.rs': 'pub struct A;\npub fn f(_: crate::B) {}\n',
        'b.rs': 'pub mod c;\nuse self::c::h;\npub struct B;\npub fn g() { h() }\n',
        'b/c.rs': 'pub fn h() { let _ = crate::A; }\n',
    }, 0, 0)
    check('comments and a test file', {
        'lib.rs': lib,
        'a.rs': 'pub struct A;\n// crate::B\n/* crate::b::C */\n',
        'b.rs': 'pub fn g(_: crate::A) {}\n' + b + '#[cfg(test)]\nmod tests;\n',
        'b/tests.rs': 'fn t(_: crate::a::A) {}\n',
    }, 0, 0)
    check('an inline test module', {
        'lib.rs': lib,
        'a.rs': 'pub struct A;\n#[cfg(test)]\nmod tests {\n    fn t(_: crate::B) { let _ = "}"; }\n}\n',
        'b.rs': 'pub fn g(_: crate::A) {}\n' + b,
    }, 0, 0)
    print('import_loops self-test: ok')


if __name__ == '__main__':
    if sys.argv[1:] == ['--self-test']:
        self_test()
        sys.exit(0)
    bad = sum(loops(r) for r in sys.argv[1:])
    sys.exit(1 if bad else 0)
