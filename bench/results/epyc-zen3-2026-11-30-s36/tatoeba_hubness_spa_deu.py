# Run 19 (models/lase-base) on Tatoeba spa/deu: where its misses go. Vectors made first with
#   for l in spa deu; do for s in $l eng; do target/release/lase embed --quiet --threads 1 --precision f32 --model models/lase-base \
#     --input ../shared/data/tatoeba-laser/tatoeba.$l-eng.$s --output /tmp/s36/err/$l.$s.npy --normalize; done; done
#   (and the teacher's of spa's English side: --model models/all-MiniLM-L6-v2 --output /tmp/s36/err/spa.eng.teacher.npy)
# then: .venv/bin/python tatoeba_hubness_spa_deu.py   (a diagnosis of a test set, read after every choice; never used to choose)
import numpy as np
D='../shared/data/tatoeba-laser/'
def p1(X,E,es):
    nn=(X@E.T).argmax(1); return np.mean([(nn[i]==i) or es[nn[i]]==es[i] for i in range(len(X))])
def nrm(A): return A/np.linalg.norm(A,axis=1,keepdims=True)
for l in ['spa','deu']:
    X=np.load(f'/tmp/s36/err/{l}.{l}.npy'); E=np.load(f'/tmp/s36/err/{l}.eng.npy')
    es=open(D+f'tatoeba.{l}-eng.eng').read().split('\n')[:1000]
    S=X@E.T; nn=S.argmax(1); c=np.bincount(nn,minlength=1000)
    print(l,'P@1 %.3f'%p1(X,E,es),'| top hub counts',sorted(c)[-5:], 'hub texts',[es[j] for j in np.argsort(c)[-3:]])
    # CSLS k=4
    rx=np.sort(S,1)[:,-4:].mean(1); ry=np.sort(S,0)[-4:,:].mean(0)
    C=2*S-rx[:,None]-ry[None,:]; nn2=C.argmax(1); print('  CSLS P@1 %.3f'%np.mean([(nn2[i]==i) or es[nn2[i]]==es[i] for i in range(1000)]))
    mx=X.mean(0); me=E.mean(0); print('  |mean x| %.3f |mean e| %.3f cos(mx,me) %.3f'%(np.linalg.norm(mx),np.linalg.norm(me),mx@me/np.linalg.norm(mx)/np.linalg.norm(me)))
    print('  own-mean-centred P@1 %.3f'%p1(nrm(X-mx),nrm(E-me),es))
    print('  query offset (mx-me) removed from X only: %.3f'%p1(nrm(X-(mx-me)),E,es))
