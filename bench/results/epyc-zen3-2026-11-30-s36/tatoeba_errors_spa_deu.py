# Run 19 (models/lase-base) on Tatoeba spa/deu: where its misses go. Vectors made first with
#   for l in spa deu; do for s in $l eng; do target/release/lase embed --quiet --threads 1 --precision f32 --model models/lase-base \
#     --input ../shared/data/tatoeba-laser/tatoeba.$l-eng.$s --output /tmp/s36/err/$l.$s.npy --normalize; done; done
#   (and the teacher's of spa's English side: --model models/all-MiniLM-L6-v2 --output /tmp/s36/err/spa.eng.teacher.npy)
# then: .venv/bin/python tatoeba_errors_spa_deu.py   (a diagnosis of a test set, read after every choice; never used to choose)
import numpy as np, sys
D='../shared/data/tatoeba-laser/'
for l in ['spa','deu']:
    X=np.load(f'/tmp/s36/err/{l}.{l}.npy'); E=np.load(f'/tmp/s36/err/{l}.eng.npy')
    xs=open(D+f'tatoeba.{l}-eng.{l}').read().split('\n')[:1000]; es=open(D+f'tatoeba.{l}-eng.eng').read().split('\n')[:1000]
    S=X@E.T; nn=S.argmax(1); ok=[(nn[i]==i) or es[nn[i]]==es[i] for i in range(1000)]
    print(l,'P@1 xx->en',np.mean(ok))
    gold=np.diag(S); 
    print(' gold cos mean %.3f; retrieved-wrong cos mean %.3f'%(gold.mean(), S[np.arange(1000),nn][~np.array(ok)].mean()))
    # en-en: how close is the nearest other English sentence in the student's own space
    EE=E@E.T; np.fill_diagonal(EE,-1); print(' student en-en nearest other mean %.3f'%EE.max(1).mean())
    # lengths of errors
    err=[i for i in range(1000) if not ok[i]]
    print(' mean len (chars) err %.1f ok %.1f'%(np.mean([len(xs[i]) for i in err]), np.mean([len(xs[i]) for i in range(1000) if ok[i]])))
    # rank of gold
    ranks=(S>gold[:,None]).sum(1); print(' rank of gold among errors: median',np.median(ranks[err]),'share rank<=4', np.mean(ranks[err]<=4))
    for i in err[:12]: print('  ',repr(xs[i]),'| gold:',repr(es[i]),'| got:',repr(es[nn[i]]),'%.2f %.2f'%(gold[i],S[i,nn[i]]))
T=np.load('/tmp/s36/err/spa.eng.teacher.npy'); T/=np.linalg.norm(T,axis=1,keepdims=True); TT=T@T.T; np.fill_diagonal(TT,-1); print('teacher en-en nearest other mean %.3f'%TT.max(1).mean())
E=np.load('/tmp/s36/err/spa.eng.npy'); print('student-vs-teacher en cos mean %.3f'%(E*T).sum(1).mean())
