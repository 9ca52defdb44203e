"""Finds loops of files importing each other in a crate's source folder.

Each .rs file is a module; an edge runs from a module to every module it
names through `crate::` or `super::` (comments and the test module left
out). A loop is a strongly connected group of two or more modules. A
module's own children (`mod x;` and `x::...`) and `use super::*` in a
child are not edges: a module's private helper files may lean on it.

Usage: python3 scripts/import_loops.py server/src app/src
Exits 1, listing each loop, when there is one.
"""
import os,re,sys,collections

def loops(root):
    files={}
    for dp,_,fs in os.walk(root):
        for f in fs:
            if f.endswith('.rs'):
                p=os.path.join(dp,f); rel=os.path.relpath(p,root)[:-3]
                mod=rel.replace('/mod','').replace('/','::')
                if mod in ('lib','main'): mod=''
                files[mod]=open(p).read()
    mods=set(files)
    def resolve(path):
        parts=path.split('::')
        best=None
        for i in range(len(parts),0,-1):
            m='::'.join(parts[:i])
            if m in mods: return m
        return ''
    edges=collections.defaultdict(set)
    for m,src in files.items():
        # strip test modules
        src=re.split(r'#\[cfg\(test\)\]\s*mod tests',src)[0]
        src=re.sub(r"//[^\n]*","",src)
        for mt in re.finditer(r'crate::([A-Za-z_][\w:]*)',src):
            t=resolve(mt.group(1))
            if t!=m and not (t and m.startswith(t+'::')) : edges[m].add(t)
        for mt in re.finditer(r'\bsuper::([A-Za-z_][\w:]*)',src):
            base=m.rsplit('::',1)[0] if '::' in m else ''
            # super of a mod.rs file: m is the dir module itself
            t=resolve((base+'::' if base else '')+mt.group(1))
            if t!=m and not (t and m.startswith(t+'::')): edges[m].add(t)
    # SCCs (Tarjan)
    idx={};low={};st=[];on=set();sccs=[];c=[0]
    sys.setrecursionlimit(10000)
    def sc(v):
        idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
        for w in edges[v]:
            if w not in idx: sc(w);low[v]=min(low[v],low[w])
            elif w in on: low[v]=min(low[v],idx[w])
        if low[v]==idx[v]:
            comp=[]
            while True:
                w=st.pop();on.discard(w);comp.append(w)
                if w==v:break
            sccs.append(comp)
    for v in list(mods): 
        if v not in idx: sc(v)
    found=[c for c in sccs if len(c)>1]
    for comp in found:
        print(root+':',len(comp),'modules import each other:',sorted(comp))
        for a in sorted(comp):
            print('   ',a or '<lib>','->',sorted(x or '<lib>' for x in edges[a] if x in comp))
    return len(found)


if __name__ == '__main__':
    bad=sum(loops(r) for r in sys.argv[1:])
    sys.exit(1 if bad else 0)
