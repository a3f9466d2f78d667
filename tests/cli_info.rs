//! `lase info`: the machine as lase sees it, and a model's shape and `auto` precision.

mod common;

use std::path::Path;
use std::process::Command;

use common::{mean_head, tiny_config, tiny_encoder};

fn lase_info(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lase"))
        .args(["--device", "cpu", "--threads", "2", "info"])
        .args(args)
        .env("LASE_LOG", "warn")
        .output()
        .unwrap()
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("lase info --json prints one JSON object")
}

/// Bytes of every file below `dir`, walked here independently of lase.
fn bytes_below(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                bytes_below(&e.path())
            } else {
                e.metadata().unwrap().len()
            }
        })
        .sum()
}

/// Copies the folder tree of `from` into `to` with a link in place of each file.
fn link_files(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir(&target).unwrap();
            link_files(&entry.path(), &target);
        } else {
            std::os::unix::fs::symlink(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn the_machine_report_matches_proc_cpuinfo() {
    let info = json_of(&lase_info(&["--json"]));
    assert_eq!(info["libtorch_threads"], 2);
    assert_eq!(info["device"], "cpu");
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| l.split_whitespace().skip(2).collect())
        .unwrap_or_default();
    let reported = info["cpu_flags"].as_object().unwrap();
    assert_eq!(reported.len(), 10, "{reported:?}");
    for (flag, has) in reported {
        assert_eq!(
            has.as_bool().unwrap(),
            flags.contains(&flag.as_str()),
            "flag {flag}"
        );
    }
    // The hardware pick follows the documented order: AMX -> bf16, VNNI -> int8,
    // AVX512-BF16 -> bf16, AVX2 -> int8, else f32.
    let expected = if flags.contains(&"amx_bf16") {
        "bf16"
    } else if flags.contains(&"avx512_vnni") || flags.contains(&"avx_vnni") {
        "int8"
    } else if flags.contains(&"avx512_bf16") {
        "bf16"
    } else if flags.contains(&"avx2") {
        "int8"
    } else {
        "f32"
    };
    assert_eq!(info["hardware_precision"], expected);
    assert!(info.get("model").is_none(), "no --model, no model section");

    let text = lase_info(&[]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("libtorch threads 2"), "{text}");
    assert!(
        text.contains(&format!("precision auto on this device: {expected}")),
        "{text}"
    );
}

#[test]
fn a_model_report_gives_its_shape_size_and_auto_precision() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = tiny_config();
    // Every number of the shape differs from the others, so a field swapped in the
    // report shows.
    config.num_hidden_layers = 3;
    assert_ne!(config.num_attention_heads, 3);
    let encoder = tiny_encoder(config.clone(), mean_head(config.hidden_size, true), 3);
    encoder.save(dir.path()).unwrap();
    let parameters: i64 = encoder
        .var_store()
        .variables()
        .values()
        .map(|t| t.numel() as i64)
        .sum();

    // A Hugging Face cache snapshot is folders of links, each file linked to a blob: the
    // linked sizes count.
    let snapshot = tempfile::tempdir().unwrap();
    link_files(dir.path(), snapshot.path());
    let linked = json_of(&lase_info(&[
        "--json",
        "--model",
        snapshot.path().to_str().unwrap(),
    ]));
    assert_eq!(linked["model"]["bytes_on_disk"], bytes_below(dir.path()));

    let info = json_of(&lase_info(&[
        "--json",
        "--model",
        dir.path().to_str().unwrap(),
    ]));
    let model = &info["model"];
    assert_eq!(model["layers"], config.num_hidden_layers);
    assert_eq!(model["hidden_size"], config.hidden_size);
    assert_eq!(model["attention_heads"], config.num_attention_heads);
    assert_eq!(model["feed_forward_size"], config.intermediate_size);
    assert_eq!(model["vocabulary_size"], config.vocab_size);
    assert_eq!(model["max_tokens"], 32);
    assert_eq!(model["output_dimensions"], config.hidden_size);
    assert_eq!(model["pooling"], "mean");
    assert_eq!(model["normalized"], true);
    assert_eq!(model["parameters"], parameters);
    assert_eq!(model["bytes_on_disk"], bytes_below(dir.path()));
    let pick = model["auto_precision"].as_str().unwrap();
    assert!(["f32", "bf16", "int8"].contains(&pick), "{pick}");
    let reason = model["auto_precision_reason"].as_str().unwrap();
    if pick != "f32" {
        assert!(reason.contains("probe sentences: worst cosine"), "{reason}");
    }
}

#[test]
fn a_missing_model_is_an_error_naming_it() {
    let out = lase_info(&["--model", "/nonexistent/lase-model"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("/nonexistent/lase-model"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
