//! scripts/score_arms.sh's training precision: bf16 only on a CPU that computes it in hardware
//! (AVX512-BF16 or AMX-BF16; scripts/lib/cpu_bf16.sh), f32 elsewhere, LASE_TRAIN_PRECISION over
//! both, printed before any arm trains. The round named here has no recipes, so the script stops
//! right after that line with its error, before anything reaches `lase`.

use std::path::Path;
use std::process::Output;

fn score_arms(out: &Path, cpuinfo: &Path, precision: Option<&str>) -> Output {
    std::process::Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/score_arms.sh"))
        .arg("no-such-round-for-tests")
        .arg(out)
        .env("LASE", "/nonexistent/lase")
        .env("LASE_CPUINFO", cpuinfo)
        .env_remove("LASE_TRAIN_PRECISION")
        .envs(precision.map(|p| ("LASE_TRAIN_PRECISION", p)))
        .output()
        .expect("bash runs")
}

fn printed(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn training_precision_follows_the_cpu_and_the_variable_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let amx = dir.path().join("cpuinfo-amx");
    std::fs::write(
        &amx,
        "flags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n",
    )
    .unwrap();
    let avx2 = dir.path().join("cpuinfo-avx2");
    std::fs::write(&avx2, "flags\t\t: fpu avx2 fma avx512_vnni\n").unwrap();
    let out = dir.path().join("out");
    let cases = [
        (
            &amx,
            None,
            "training precision: bf16 (the CPU has AVX512-BF16 or AMX)",
        ),
        (
            &avx2,
            None,
            "training precision: f32 (the CPU has neither AVX512-BF16 nor AMX",
        ),
        (
            &avx2,
            Some("bf16"),
            "training precision: bf16 (LASE_TRAIN_PRECISION)",
        ),
        (
            &amx,
            Some("f32"),
            "training precision: f32 (LASE_TRAIN_PRECISION)",
        ),
    ];
    for (cpuinfo, precision, line) in cases {
        let o = score_arms(&out, cpuinfo, precision);
        let e = printed(&o);
        assert!(e.contains(line), "{line}\n{e}");
        // Then the missing recipe stops it, naming the file, before any training.
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(
            e.contains("score_arms.sh: no configs/lase-base-no-such-round-for-tests-mse2-cpu.toml"),
            "{e}"
        );
    }
}
