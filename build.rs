//! Embeds the libtorch library folder as the binaries' RUNPATH, so `lase` and the test
//! binaries run without the user exporting LD_LIBRARY_PATH. A RUNPATH (not RPATH) still
//! lets LD_LIBRARY_PATH override it: on a GPU machine, pointing LD_LIBRARY_PATH at a full
//! PyTorch `torch/lib` loads the CUDA-enabled libtorch instead of the CPU one.

fn main() {
    // torch-sys (`links = "tch"`) publishes the folder it linked against.
    let lib_dir = std::env::var("DEP_TCH_LIBTORCH_LIB")
        .ok()
        .or_else(|| std::env::var("LIBTORCH").ok().map(|d| format!("{d}/lib")));
    if let Some(lib_dir) = lib_dir {
        println!("cargo:rustc-link-arg=-Wl,--enable-new-dtags,-rpath,{lib_dir}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
}
