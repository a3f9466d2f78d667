//! Where computation runs: device choice and CPU thread count.
//!
//! lase links a CPU libtorch (see scripts/setup.sh). On a GPU machine, pointing
//! LD_LIBRARY_PATH at a full PyTorch `torch/lib` makes the loader pick the real
//! `libtorch.so`; `libtorch_cuda.so` is then loaded here explicitly (RTLD_GLOBAL) so its
//! CUDA kernels register before the first CUDA tensor is made.

use std::str::FromStr;

use tch::Device;

use crate::error::{LaseError, Result};

/// A device request from the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// CUDA device 0 when one is usable, else CPU.
    #[default]
    Auto,
    Cpu,
    Cuda(usize),
}

impl FromStr for DeviceChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "cuda" | "gpu" => Ok(Self::Cuda(0)),
            other => other
                .strip_prefix("cuda:")
                .and_then(|i| i.parse().ok())
                .map(Self::Cuda)
                .ok_or_else(|| format!("unknown device {other:?} (auto, cpu, cuda, cuda:N)")),
        }
    }
}

/// Loads libtorch's CUDA half if the dynamic loader can find it. Returns whether CUDA
/// is usable afterwards.
pub fn cuda_available() -> bool {
    static LOADED: std::sync::Once = std::sync::Once::new();
    LOADED.call_once(|| {
        let name = c"libtorch_cuda.so";
        // SAFETY: dlopen with a valid C string; the handle is intentionally leaked so the
        // library stays loaded for the life of the process.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if !handle.is_null() {
            tracing::debug!("loaded {name:?}");
        }
    });
    tch::Cuda::is_available()
}

/// Resolves a device request. A GPU gets lase's attention setting first
/// ([`configure_gpu_attention`]).
pub fn resolve_device(choice: DeviceChoice) -> Result<Device> {
    let device = match choice {
        DeviceChoice::Cpu => Device::Cpu,
        DeviceChoice::Auto => {
            if cuda_available() {
                Device::Cuda(0)
            } else {
                Device::Cpu
            }
        }
        DeviceChoice::Cuda(i) => {
            if !cuda_available() {
                return Err(LaseError::InvalidArgument(
                    "CUDA was requested but libtorch has no usable CUDA device (point \
                     LD_LIBRARY_PATH at a CUDA build of PyTorch's torch/lib)"
                        .into(),
                ));
            }
            let count = tch::Cuda::device_count() as usize;
            if i >= count {
                return Err(LaseError::InvalidArgument(format!(
                    "cuda:{i} requested but only {count} CUDA devices are visible"
                )));
            }
            Device::Cuda(i)
        }
    };
    if device.is_cuda() {
        configure_gpu_attention();
    }
    Ok(device)
}

unsafe extern "C" {
    fn lase_sdpa_set_cudnn(enabled: bool);
    fn lase_sdpa_cudnn_enabled() -> bool;
}

/// Keeps cuDNN's attention out of libtorch's scaled_dot_product_attention on GPUs, unless
/// `LASE_CUDNN_SDPA=on`. cuDNN's kernel serves half-precision inputs with a mask (lase's
/// bf16 passes: a padding mask on every batch), and builds an execution plan for each new
/// (batch, length) shape, reported at 0.44 s a plan on a B200 with torch 2.11
/// (modelscope/FunASR#3704); lase's length-sorted batches are nearly all new shapes. The
/// H200 measured lase's bf16 encode at 0.21x its float32 (2,794.9 vs 13,315.6 sentences/s,
/// docs/benchmarks.md), which float32 (never cuDNN's) does not show: this is the cause
/// suspected, not yet measured with the switch. Without cuDNN, half-precision attention
/// with a mask runs on libtorch's memory-efficient kernel, as float32 does.
pub fn configure_gpu_attention() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let keep = std::env::var("LASE_CUDNN_SDPA").is_ok_and(|v| v == "on");
        set_cudnn_attention(keep);
        tracing::debug!(
            "cuDNN attention {} (LASE_CUDNN_SDPA=on keeps it)",
            if keep { "kept" } else { "off" }
        );
    });
}

/// Allows or forbids cuDNN's attention kernel in scaled_dot_product_attention (a
/// process-wide libtorch setting, as `torch.backends.cuda.enable_cudnn_sdp`).
pub fn set_cudnn_attention(enabled: bool) {
    // SAFETY: sets a flag in libtorch's global context; no pointers cross.
    unsafe { lase_sdpa_set_cudnn(enabled) }
}

/// Whether scaled_dot_product_attention may choose cuDNN's attention kernel.
pub fn cudnn_attention_enabled() -> bool {
    // SAFETY: reads a flag in libtorch's global context.
    unsafe { lase_sdpa_cudnn_enabled() }
}

/// The CPU's feature flags as /proc/cpuinfo lists them (empty where it cannot be read).
pub fn cpu_flags() -> Vec<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo_field(&info, "flags")
        .map(|v| v.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// The CPU's name as /proc/cpuinfo gives it, with its family and model numbers.
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name| cpuinfo_field(&info, name);
    match (field("model name"), field("cpu family"), field("model")) {
        (Some(name), Some(family), Some(model)) => {
            format!("{name} (family {family}, model {model})")
        }
        (Some(name), _, _) => name.to_string(),
        _ => "unknown (no /proc/cpuinfo)".into(),
    }
}

/// The value of the first `name : value` line of /proc/cpuinfo's text (the first CPU's).
fn cpuinfo_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(key, _)| key.trim() == name)
        .map(|(_, value)| value.trim())
}

/// Whether the CPU has native bfloat16 matrix instructions (AVX512-BF16 or AMX), without
/// which libtorch's bf16 kernels are slower than float32.
pub fn cpu_has_fast_bf16() -> bool {
    has_fast_bf16(&cpu_flags())
}

/// [`cpu_has_fast_bf16`] for a given list of flags.
pub fn has_fast_bf16<S: AsRef<str>>(flags: &[S]) -> bool {
    flags
        .iter()
        .any(|f| matches!(f.as_ref(), "avx512_bf16" | "amx_bf16"))
}

/// Whether a CPU with these /proc/cpuinfo flags has AMX bfloat16 tiles (Intel Xeon since
/// Sapphire Rapids).
pub fn has_amx<S: AsRef<str>>(flags: &[S]) -> bool {
    flags.iter().any(|f| f.as_ref() == "amx_bf16")
}

/// Sets libtorch's intra-op thread count (0 keeps libtorch's default: one per core).
pub fn set_threads(threads: usize) {
    if threads > 0 {
        tch::set_num_threads(i32::try_from(threads).unwrap_or(i32::MAX));
    }
}

/// Returns the heap's free pages to the system (glibc's `malloc_trim(0)`; nothing on
/// other C libraries, whose allocators differ). glibc gives back only the top of its heap
/// when memory is freed, so pages freed in the middle (a corpus read whole, then mostly
/// dropped for a sample) stay counted in the process's memory until this is called.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own free lists; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Keeps memory that a training step frees in glibc's heap for the next step, instead of
/// handing every block over glibc's mmap threshold (at most 32 MiB) back to the kernel on
/// free and taking fresh zeroed pages for it on the next step (`mallopt(M_MMAP_MAX, 0)`,
/// `mallopt(M_TRIM_THRESHOLD, i32::MAX)`). Call it once the data is read (reading grows
/// large buffers, which mmap lets move without a copy); a multistage distillation's later
/// stages read theirs with it already applied. Nothing on other C libraries, nor where the
/// user has set glibc's malloc settings (`GLIBC_TUNABLES=glibc.malloc...` or the older
/// `MALLOC_*_` variables): theirs stand. Returns whether it applied. On a thread other than
/// the main one, glibc still maps a block larger than a thread heap (64 MiB); the trainer's
/// steps run on the main thread.
///
/// Measured (docs/benchmarks.md, "glibc's heap kept for reuse in training"): a perf profile
/// of a training run on one core of an AVX2-only Zen 3 put 31.6% of its time in the
/// kernel, 22.8% zeroing pages; with these settings one training process on both cores
/// made 1.06x the pairs/s while a stopped run stayed resident (as glibc tunables, peak RSS
/// unchanged) and 1.01x with no other run (this call; peak RSS +0.7% and +2.1%), the same
/// losses in both.
pub fn keep_freed_memory_for_reuse() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if user_set_malloc_options() {
            return false;
        }
        // SAFETY: mallopt only changes glibc's allocation policy for later requests; blocks
        // already mapped stay valid and are freed as before. glibc marks it MT-unsafe during
        // its own initialisation only; the trainer calls it before a step, on the thread
        // that runs the steps.
        unsafe {
            libc::mallopt(libc::M_MMAP_MAX, 0) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Whether the environment carries glibc malloc settings of the user's: a
/// `glibc.malloc.` tunable, or one of the older variables glibc still reads.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn user_set_malloc_options() -> bool {
    const OLDER: [&str; 5] = [
        "MALLOC_MMAP_MAX_",
        "MALLOC_MMAP_THRESHOLD_",
        "MALLOC_TRIM_THRESHOLD_",
        "MALLOC_TOP_PAD_",
        "MALLOC_ARENA_MAX",
    ];
    std::env::var_os("GLIBC_TUNABLES")
        .is_some_and(|t| t.to_string_lossy().contains("glibc.malloc."))
        || OLDER.iter().any(|v| std::env::var_os(v).is_some())
}

/// Makes the calling thread flush denormal floats to zero (x86 MXCSR FTZ + DAZ), as
/// `torch.set_flush_denormal(True)`; threads created afterwards (libtorch's OpenMP pool,
/// inference workers) inherit the setting. Call it first thing in a process, before
/// libtorch starts its threads. Returns whether the CPU supports it.
///
/// Why: during training, softmax tails and Adam moments of rarely used rows decay into
/// the denormal range, where x86 arithmetic is ~100x slower. Measured on the EMS-small
/// recipe: 30 pairs/s at step 150 without it against 100 pairs/s fresh (docs/benchmarks.md).
pub fn flush_denormals() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        const FLUSH_TO_ZERO: u32 = 1 << 15;
        const DENORMALS_ARE_ZERO: u32 = 1 << 6;
        let mut csr: u32 = 0;
        // SAFETY: stmxcsr/ldmxcsr read and write this thread's SSE control register;
        // setting FTZ/DAZ only changes how denormal results and inputs are treated.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
            csr |= FLUSH_TO_ZERO | DENORMALS_ARE_ZERO;
            std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack));
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_fields_are_read_by_their_whole_name_from_the_first_cpu() {
        let info = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n\
                    model name\t: AMD EPYC 9R45\nflags\t\t: fpu avx2 avx512f\n\n\
                    processor\t: 1\nmodel\t\t: 3\nflags\t\t: fpu\n";
        assert_eq!(cpuinfo_field(info, "model"), Some("2"));
        assert_eq!(cpuinfo_field(info, "model name"), Some("AMD EPYC 9R45"));
        assert_eq!(cpuinfo_field(info, "flags"), Some("fpu avx2 avx512f"));
        assert_eq!(cpuinfo_field(info, "microcode"), None);
    }

    #[test]
    fn the_cudnn_attention_switch_reaches_libtorch() {
        let before = cudnn_attention_enabled();
        set_cudnn_attention(false);
        assert!(!cudnn_attention_enabled());
        set_cudnn_attention(true);
        assert!(cudnn_attention_enabled());
        set_cudnn_attention(before);
    }

    #[test]
    fn flushed_thread_turns_denormals_into_zero() {
        std::thread::spawn(|| {
            let tiny = std::hint::black_box(f32::MIN_POSITIVE);
            assert!(tiny / 4.0 > 0.0, "denormal before");
            if flush_denormals() {
                let tiny = std::hint::black_box(f32::MIN_POSITIVE);
                assert_eq!(tiny / 4.0, 0.0, "flushed after");
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn parses_device_names() {
        assert_eq!("cpu".parse::<DeviceChoice>().unwrap(), DeviceChoice::Cpu);
        assert_eq!(
            "cuda:2".parse::<DeviceChoice>().unwrap(),
            DeviceChoice::Cuda(2)
        );
        assert!("tpu".parse::<DeviceChoice>().is_err());
        assert_eq!(resolve_device(DeviceChoice::Cpu).unwrap(), Device::Cpu);
    }
}
