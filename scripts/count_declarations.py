#!/usr/bin/env python3
"""Counts the declarations at class scope of one class in a header: each
statement ending in ';' (members, methods, usings, forward declarations)
and each inline member function body, comments and access specifiers left
out. The figure docs/architecture.md gives for `Cluster`.

Usage: count_declarations.py HEADER CLASS
  e.g. scripts/count_declarations.py crawler/src/cluster/cluster.h Cluster
"""
import re
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
path, name = sys.argv[1], sys.argv[2]
s=open(path).read()
s=re.sub(r'//[^\n]*','',s)
i=re.search(r'class\s+'+name+r'\b[^;{]*\{',s).end()
depth=1;count=0;stmt=''
while depth>0:
    c=s[i];i+=1
    if c=='{':
        depth+=1
        if depth==2: stmt+='{'
        continue
    if c=='}':
        depth-=1
        if depth==1:
            count+=1; stmt=''
            # skip a trailing ';' after an inline body
            j=i
            while s[j] in ' \n': j+=1
            if s[j]==';': i=j+1
        continue
    if depth==1:
        stmt+=c
        if c==';':
            t=stmt.strip()
            if t and not re.fullmatch(r'(public|private|protected)\s*:\s*;?',t): count+=1
            stmt=''
        elif c==':' and re.search(r'(public|private|protected)\s*:$',stmt.strip()):
            stmt=''
print(count)
