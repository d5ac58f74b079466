import json,sys,statistics as st
from collections import defaultdict
rows=[json.loads(l) for f in sys.argv[1:] for l in open(f)]
d=defaultdict(list)
for r in rows: d[(r['problem'],r['sampler'])].append(r)
def q(v,p):
    v=sorted(v); k=(len(v)-1)*p; f=int(k); c=min(f+1,len(v)-1); return v[f]+(v[c]-v[f])*(k-f)
for (p,s),rs in sorted(d.items()):
    out=[]
    for b in ['25','50','100']:
        v=[r['regret'][b] for r in rs if b in r['regret']]
        if v: out.append('%s: %.3f/%.3f' % (b,st.median(v),q(v,.75)))
    t=st.mean(r['seconds']['100']/100 for r in rs if '100' in r['seconds'])
    print(p.ljust(22), s.ljust(36), len(rs), '  '.join(out), ' s/trial %.4f'%t)
