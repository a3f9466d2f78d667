//! `lase serve`'s flags, checked by the binary before it loads a model or opens a port.

use std::process::Command;

fn serve_with(flag: &str, value: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lase"))
        .args([
            "serve",
            "--model",
            "/nonexistent/model",
            "--port",
            "0",
            flag,
            value,
        ])
        .env("LASE_LOG", "warn")
        .output()
        .unwrap()
}

/// hyper adds the header timeout to `Instant::now()`, which panics on overflow at the first
/// request of every connection: a timeout past one year is refused up front, naming its
/// flag, before the model is loaded.
#[test]
fn absurd_timeouts_are_refused_naming_the_flag() {
    for (flag, value) in [
        ("--header-timeout-seconds", "18446744073709551615"),
        ("--body-timeout-seconds", "31536001"),
        ("--write-timeout-seconds", "18446744073709551615"),
        ("--shutdown-timeout-seconds", "18446744073709551615"),
        ("--max-mine-seconds", "40000000"),
    ] {
        let out = serve_with(flag, value);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value} was accepted");
        assert!(
            stderr.contains(&format!("{flag} {value}: at most 31536000 (one year)")),
            "{flag} {value}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // One year itself is accepted: the refusal is then about the missing model.
    let out = serve_with("--header-timeout-seconds", "31536000");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("/nonexistent/model"), "{stderr}");
}
