//! Two jobs:
//! - embeds the libtorch library folder as the binaries' RUNPATH, so `lase` and the test
//!   binaries run without the user exporting LD_LIBRARY_PATH. A RUNPATH (not RPATH) still
//!   lets LD_LIBRARY_PATH override it: on a GPU machine, pointing LD_LIBRARY_PATH at a full
//!   PyTorch `torch/lib` loads the CUDA-enabled libtorch instead of the CPU one;
//! - compiles csrc/int8_linear.cpp, the call into libtorch's dynamic int8 linear kernels
//!   (src/model/int8.rs), and csrc/packed_linear.cpp, its prepacked bfloat16 linear
//!   kernels (src/model/packed_linear.rs), and csrc/sdpa_backends.cpp, the attention
//!   backend switch (src/runtime.rs), against the same libtorch's headers, as torch-sys
//!   compiles its own.

use std::path::PathBuf;

fn main() {
    // torch-sys (`links = "tch"`) publishes the folder it linked against.
    let lib_dir = std::env::var("DEP_TCH_LIBTORCH_LIB")
        .ok()
        .or_else(|| std::env::var("LIBTORCH").ok().map(|d| format!("{d}/lib")));
    let Some(lib_dir) = lib_dir else {
        panic!("libtorch not found: run scripts/setup.sh (or export LIBTORCH)");
    };
    println!("cargo:rustc-link-arg=-Wl,--enable-new-dtags,-rpath,{lib_dir}");
    let include = PathBuf::from(&lib_dir)
        .parent()
        .expect("libtorch's lib folder has a parent")
        .join("include");
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag("-D_GLIBCXX_USE_CXX11_ABI=1")
        .flag("-DGLOG_USE_GLOG_EXPORT")
        .flag_if_supported("-Wno-unused-parameter")
        // `#pragma omp simd` only (vectorised loops in csrc/int8_linear.cpp; no OpenMP
        // runtime is linked by this flag).
        .flag("-fopenmp-simd")
        .file("csrc/int8_linear.cpp")
        .file("csrc/packed_linear.cpp")
        .file("csrc/sdpa_backends.cpp")
        .compile("lase_torch_ops");
    println!("cargo:rerun-if-changed=csrc/int8_linear.cpp");
    println!("cargo:rerun-if-changed=csrc/packed_linear.cpp");
    println!("cargo:rerun-if-changed=csrc/sdpa_backends.cpp");
    println!("cargo:rerun-if-changed=csrc/torch_ops.h");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
}
