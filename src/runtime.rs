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

/// Resolves a device request.
pub fn resolve_device(choice: DeviceChoice) -> Result<Device> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Auto => Ok(if cuda_available() {
            Device::Cuda(0)
        } else {
            Device::Cpu
        }),
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
            Ok(Device::Cuda(i))
        }
    }
}

/// The CPU's feature flags as /proc/cpuinfo lists them (empty where it cannot be read).
pub fn cpu_flags() -> Vec<String> {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("flags"))
                .map(|l| l.split_whitespace().skip(2).map(String::from).collect())
        })
        .unwrap_or_default()
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

/// Sets libtorch's intra-op thread count (0 keeps libtorch's default: one per core).
pub fn set_threads(threads: usize) {
    if threads > 0 {
        tch::set_num_threads(threads as i32);
    }
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
