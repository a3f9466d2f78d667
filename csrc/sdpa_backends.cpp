// Which kernels libtorch's scaled_dot_product_attention may choose, for src/runtime.rs:
// the switch `torch.backends.cuda.enable_cudnn_sdp` flips in Python. A process-wide flag
// (at::globalContext()), read at each attention call; it changes nothing on the CPU.
#include <ATen/Context.h>

extern "C" {

void lase_sdpa_set_cudnn(bool enabled) { at::globalContext().setSDPUseCuDNN(enabled); }

bool lase_sdpa_cudnn_enabled() { return at::globalContext().userEnabledCuDNNSDP(); }

}  // extern "C"
