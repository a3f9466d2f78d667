# libtorch scaled_dot_product_attention, f32 against bf16, one thread, a padded batch shaped like the speed bench's (64 sentences, 12 heads, 48 tokens of which 40 real, head width 32). Run: .venv/bin/python sdpa_bf16.py
import torch, time
torch.set_num_threads(1)
B,H,S,D=64,12,48,32
q=torch.randn(B,H,S,D); k=torch.randn(B,H,S,D); v=torch.randn(B,H,S,D)
mask=torch.ones(B,1,1,S,dtype=torch.bool); mask[:, :, :, 40:]=False
def run(kind, n=30):
    qq,kk,vv=[x.to(kind) for x in (q,k,v)]
    for _ in range(3): torch.nn.functional.scaled_dot_product_attention(qq,kk,vv,attn_mask=mask)
    t=time.perf_counter()
    for _ in range(n): torch.nn.functional.scaled_dot_product_attention(qq,kk,vv,attn_mask=mask)
    return (time.perf_counter()-t)/n
print("torch", torch.__version__)
for r in range(3):
    print("f32 %.2f ms  bf16 %.2f ms" % (run(torch.float32)*1e3, run(torch.bfloat16)*1e3))
