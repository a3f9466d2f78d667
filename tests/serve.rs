//! `lase serve` over real loopback HTTP: every endpoint, every error path, coalescing
//! of concurrent requests, and graceful shutdown with a request in flight.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use lase::inference::EncodeOptions;
use lase::serve::{ServeConfig, serve};
use tch::Device;

/// The served model. libtorch's generator is process-global and tests run on parallel
/// threads, so initialisation is serialised: every call returns the same weights.
fn tiny_model() -> lase::model::SentenceEncoder {
    static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
    common::tiny_encoder(common::tiny_config(), common::mean_head(16, false), 4)
}

struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(config: ServeConfig) -> Self {
        let encoder = tiny_model();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let options = EncodeOptions {
                    workers: 1,
                    ..EncodeOptions::for_device(Device::Cpu)
                };
                serve(listener, encoder, options, config, async {
                    let _ = stop_rx.await;
                })
                .await
                .unwrap();
            });
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        Self {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Sends one HTTP/1.1 request; returns (status, body).
    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        self.raw(method, path, body.as_bytes(), "application/json")
    }

    fn raw(&self, method: &str, path: &str, body: &[u8], content_type: &str) -> (u16, String) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        let _ = s.write_all(body);
        let mut response = Vec::new();
        let _ = s.read_to_end(&mut response);
        let text = String::from_utf8_lossy(&response).to_string();
        let status: u16 = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {text:?}"));
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    fn json(&self, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
        let (status, text) = self.request(method, path, body);
        let value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text:?}"));
        (status, value)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn norm(v: &serde_json::Value) -> f64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap().powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn embedding_endpoints_agree_with_the_library() {
    let server = Server::start(ServeConfig::default());
    let reference = tiny_model();
    let expected = common::rows(&lase::model::l2_normalize(
        &reference
            .encode(&["the dog is red", "der hund"], 8)
            .unwrap(),
    ));

    let (status, body) = server.json(
        "POST",
        "/embed",
        r#"{"inputs": ["the dog is red", "der hund"]}"#,
    );
    assert_eq!(status, 200, "{body}");
    let rows = body.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, want) in rows.iter().zip(&expected) {
        let got: Vec<f32> = row
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        assert!(common::cosine(&got, want) > 0.99999);
        assert!((norm(row) - 1.0).abs() < 1e-5);
    }
    // POST / answers as /embed (TEI's route for an embedding model, which
    // huggingface_hub's InferenceClient.feature_extraction uses).
    let (status, root) = server.json("POST", "/", r#"{"inputs": ["the dog is red", "der hund"]}"#);
    assert_eq!(status, 200, "{root}");
    assert_eq!(&root, &body);
    // A single string; raw (unnormalised) output; first 4 dimensions renormalised.
    let (_, one) = server.json(
        "POST",
        "/embed",
        r#"{"inputs": "the dog is red", "normalize": false}"#,
    );
    assert!((norm(&one[0]) - 1.0).abs() > 1e-3);
    let (_, short) = server.json(
        "POST",
        "/embed",
        r#"{"inputs": "the dog is red", "dimensions": 4}"#,
    );
    assert_eq!(short[0].as_array().unwrap().len(), 4);
    assert!((norm(&short[0]) - 1.0).abs() < 1e-5);

    let (status, oa) = server.json(
        "POST",
        "/v1/embeddings",
        r#"{"input": ["the cat", "a dog"], "model": "m"}"#,
    );
    assert_eq!(status, 200, "{oa}");
    assert_eq!(oa["object"], "list");
    assert_eq!(oa["data"][1]["index"], 1);
    assert_eq!(oa["model"], "m");
    assert!(oa["usage"]["prompt_tokens"].as_u64().unwrap() >= 4);
    let float: Vec<f64> = oa["data"][0]["embedding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let (_, b64) = server.json(
        "POST",
        "/v1/embeddings",
        r#"{"input": "the cat", "encoding_format": "base64"}"#,
    );
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64["data"][0]["embedding"].as_str().unwrap())
        .unwrap();
    let decoded: Vec<f32> = bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(decoded.len(), 16);
    for (a, b) in decoded.iter().zip(&float) {
        assert!((*a as f64 - b).abs() < 1e-6);
    }
    let (_, int8) = server.json(
        "POST",
        "/v1/embeddings",
        r#"{"input": "the cat", "encoding_format": "int8"}"#,
    );
    for (q, f) in int8["data"][0]["embedding"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&float)
    {
        assert_eq!(q.as_i64().unwrap(), (f * 127.0).round() as i64);
    }
    let (_, bin) = server.json(
        "POST",
        "/v1/embeddings",
        r#"{"input": "the cat", "encoding_format": "binary"}"#,
    );
    let packed = bin["data"][0]["embedding"].as_array().unwrap();
    assert_eq!(packed.len(), 2);
    let first = packed[0].as_i64().unwrap();
    for (i, f) in float.iter().take(8).enumerate() {
        assert_eq!((first >> (7 - i)) & 1 == 1, *f > 0.0);
    }

    let (status, sim) = server.json(
        "POST",
        "/similarity",
        r#"{"inputs": {"source_sentence": "the dog is red", "sentences": ["the dog is red", "green house"]}}"#,
    );
    assert_eq!(status, 200, "{sim}");
    let s = sim.as_array().unwrap();
    assert!((s[0].as_f64().unwrap() - 1.0).abs() < 1e-5);
    assert!(s[1].as_f64().unwrap() < 0.9999);
}

#[test]
fn mine_health_info_and_metrics() {
    let server = Server::start(ServeConfig::default());
    let (status, mined) = server.json(
        "POST",
        "/mine",
        r#"{"src": ["the dog is red", "the cat is small", "a green house"], "tgt": ["a green house", "the dog is red", "the cat is small"], "k": 2, "margin": "ratio", "retrieval": "max"}"#,
    );
    assert_eq!(status, 200, "{mined}");
    let pairs = mined["pairs"].as_array().unwrap();
    assert!(!pairs.is_empty());
    // Identical sentences are each other's best match.
    for p in pairs {
        assert_eq!(p["src"], p["tgt"], "{p}");
    }
    let (status, health) = server.json("GET", "/health", "");
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));
    let (_, info) = server.json("GET", "/info", "");
    assert_eq!(info["dimensions"], 16);
    assert_eq!(info["max_input_length"], 32);
    let (status, metrics) = server.request("GET", "/metrics", "");
    assert_eq!(status, 200);
    assert!(
        metrics.contains("lase_requests_total{route=\"/mine\",status=\"200\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("lase_batch_sentences_count"), "{metrics}");
    assert!(metrics.contains("lase_queue_depth 0"), "{metrics}");
}

#[test]
fn every_error_path_is_a_json_error() {
    let server = Server::start(ServeConfig {
        max_body_bytes: 4096,
        max_client_batch_size: 3,
        max_mine_tokens: 40,
        ..Default::default()
    });
    let cases: Vec<(&str, String, u16)> = vec![
        ("/embed", "{not json".into(), 400),
        ("/embed", r#"{"inputs": "a", "colour": "red"}"#.into(), 422),
        ("/embed", r#"{"inputs": []}"#.into(), 422),
        ("/embed", r#"{"inputs": ["a", "b", "c", "d"]}"#.into(), 422),
        (
            "/embed",
            format!(r#"{{"inputs": "{}"}}"#, "the dog ".repeat(40)),
            422,
        ),
        (
            "/embed",
            format!(r#"{{"inputs": ["{}"]}}"#, "x".repeat(5000)),
            413,
        ),
        ("/embed", r#"{"inputs": "a", "dimensions": 99}"#.into(), 422),
        (
            "/v1/embeddings",
            r#"{"input": "a", "encoding_format": "float16"}"#.into(),
            422,
        ),
        (
            "/similarity",
            r#"{"inputs": {"source_sentence": "a", "sentences": []}}"#.into(),
            422,
        ),
        (
            "/mine",
            format!(
                r#"{{"src": ["{0}", "{0}"], "tgt": ["{0}"], "truncate": true}}"#,
                "the dog ".repeat(10)
            ),
            413,
        ),
        (
            "/mine",
            r#"{"src": ["a"], "tgt": ["b"], "margin": "golden"}"#.into(),
            422,
        ),
        (
            "/mine",
            r#"{"src": ["a"], "tgt": ["b"], "k": 0}"#.into(),
            422,
        ),
        ("/mine", r#"{"src": [], "tgt": ["b"]}"#.into(), 422),
        ("/nowhere", "{}".into(), 404),
    ];
    for (path, body, want) in cases {
        let (status, text) = server.request("POST", path, &body);
        assert_eq!(status, want, "{path} {body:.60}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{path}: error body is not JSON: {text:?}"));
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{text}");
    }
    let (status, _) = server.raw("POST", "/embed", br#"{"inputs": "a"}"#, "text/plain");
    assert_eq!(status, 415);
    // Long input is fine with truncate.
    let (status, _) = server.request(
        "POST",
        "/embed",
        &format!(
            r#"{{"inputs": "{}", "truncate": true}}"#,
            "the dog ".repeat(40)
        ),
    );
    assert_eq!(status, 200);
    // The server is still healthy after all that.
    assert_eq!(server.request("GET", "/health", "").0, 200);
}

#[test]
fn full_queue_answers_429_and_concurrent_requests_are_coalesced() {
    // A queue of one request: a burst of concurrent requests must see some 429s (never a
    // hang or a 5xx), and the ones admitted are answered.
    let server = Server::start(ServeConfig {
        max_queued_requests: 1,
        ..Default::default()
    });
    let addr = server.addr;
    let body = format!(
        r#"{{"inputs": [{}]}}"#,
        vec!["\"the big dog runs fast with the small cat\""; 64].join(",")
    );
    let handles: Vec<_> = (0..24)
        .map(|_| {
            let body = body.clone();
            std::thread::spawn(move || {
                let probe = Server {
                    addr,
                    stop: None,
                    thread: None,
                };
                probe.request("POST", "/embed", &body).0
            })
        })
        .collect();
    let statuses: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 429),
        "{statuses:?}"
    );
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(statuses.contains(&429), "{statuses:?}");

    let roomy = Server::start(ServeConfig::default());
    let addr = roomy.addr;
    let handles: Vec<_> = (0..16)
        .map(|i| {
            std::thread::spawn(move || {
                let probe = Server {
                    addr,
                    stop: None,
                    thread: None,
                };
                probe
                    .request("POST", "/embed", &format!(r#"{{"inputs": "the dog {i}"}}"#))
                    .0
            })
        })
        .collect();
    assert!(handles.into_iter().all(|h| h.join().unwrap() == 200));
    let (_, metrics) = roomy.request("GET", "/metrics", "");
    let batches: u64 = metrics
        .lines()
        .find(|l| l.starts_with("lase_batch_sentences_count"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap();
    let sentences: u64 = metrics
        .lines()
        .find(|l| l.starts_with("lase_sentences_embedded_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(sentences, 16);
    assert!(batches <= 16, "{batches} runs for 16 sentences");
}

#[test]
fn graceful_shutdown_finishes_the_request_in_flight() {
    let mut server = Server::start(ServeConfig::default());
    let addr = server.addr;
    let body = format!(
        r#"{{"inputs": [{}]}}"#,
        vec!["\"the big dog runs fast with the small cat and the red house\""; 256].join(",")
    );
    let in_flight = std::thread::spawn(move || {
        let probe = Server {
            addr,
            stop: None,
            thread: None,
        };
        probe.request("POST", "/embed", &body)
    });
    std::thread::sleep(Duration::from_millis(50));
    server.stop.take().unwrap().send(()).unwrap();
    let (status, body) = in_flight.join().unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        256
    );
    server.thread.take().unwrap().join().unwrap();
    assert!(
        TcpStream::connect(addr).is_err(),
        "still accepting after shutdown"
    );
}

/// The pipelined pool (two threads, passes of a few tokens, so runs span several passes
/// and one run's passes interleave with the next run's) returns every job's own rows.
#[test]
fn pooled_passes_route_every_row_to_its_job() {
    use lase::serve::batcher::Batcher;
    let reference = tiny_model();
    let words = common::TINY_WORDS;
    // 40 jobs of 1-5 sentences of 1-9 words each.
    let jobs: Vec<Vec<String>> = (0..40)
        .map(|j| {
            (0..1 + j % 5)
                .map(|s| {
                    (0..1 + (j * 7 + s * 3) % 9)
                        .map(|w| words[(j + s + w * 5) % words.len()])
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect()
        })
        .collect();
    let options = EncodeOptions {
        batch_size: 4,
        max_batch_tokens: 24,
        workers: 2,
    };
    let metrics = std::sync::Arc::new(lase::serve::metrics::Metrics::default());
    let (batcher, pool) = Batcher::start(tiny_model(), options, 60, 100, metrics);
    let receivers: Vec<_> = jobs
        .iter()
        .map(|sentences| {
            let tokens = reference.tokenize(sentences).unwrap();
            batcher.submit(tokens).unwrap()
        })
        .collect();
    for (sentences, rx) in jobs.iter().zip(receivers) {
        let got = rx.blocking_recv().unwrap();
        let want = reference.encode(sentences, 32).unwrap();
        assert_eq!(got.size(), want.size());
        let diff = (got - want).abs().max().double_value(&[]);
        assert!(diff < 1e-5, "{sentences:?}: {diff}");
    }
    // An empty job is answered at once with no rows.
    let empty = batcher.submit(Vec::new()).unwrap().blocking_recv().unwrap();
    assert_eq!(empty.size(), [0, 16]);
    drop(batcher);
    pool.join().unwrap();
}
