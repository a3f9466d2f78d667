//! `lase serve` over real loopback HTTP: every endpoint, every error path, coalescing
//! of concurrent requests, isolation of a panicking forward pass, and graceful shutdown
//! with a request in flight. No test here waits on a timer or needs a race to pass: a
//! request that must be in flight holds the inference worker at a gate the test opens.

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use lase::inference::Embedder;
use lase::inference::{EncodeOptions, InferenceEncoder};
use lase::serve::batcher::Batcher;
use lase::serve::metrics::Metrics;
use lase::serve::{ServeConfig, TokenizeHook, serve_with};
use lase::tokenizer::TokenIds;
use tch::Device;

/// The served model. libtorch's generator is process-global and tests run on parallel
/// threads, so initialisation is serialised: every call returns the same weights.
fn tiny_model() -> lase::model::SentenceEncoder {
    static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = INIT.lock().unwrap_or_else(|e| e.into_inner());
    common::tiny_encoder(common::tiny_config(), common::mean_head(16, false), 4)
}

/// Marked words, in the tiny vocabulary but in no other sentence of the tests that
/// use them (the /health probe's "ok" is [UNK]). A pass holding [`BOOM`] panics; a pass
/// holding [`GATE`] waits at the gate until the test opens it.
const BOOM: &str = "schnell";
const GATE: &str = "langsam";
/// A pass holding [`POISON`] returns NaN in that sentence's row (as a model whose
/// activations overflow would).
const POISON: &str = "klein";

/// The tiny tokenizer's id of a word of [`common::TINY_WORDS`].
fn word_id(word: &str) -> i64 {
    4 + common::TINY_WORDS.iter().position(|w| *w == word).unwrap() as i64
}

/// How long a test waits for something that must happen before it calls it a failure
/// (never a sleep: every wait ends as soon as the event happens).
const PATIENCE: Duration = Duration::from_secs(60);

/// The real pass encoder with faults on marked inputs: a pass holding [`BOOM`] first
/// meets `rendezvous` passes (its own included) on other workers, then panics; a pass
/// holding [`GATE`] reports that it started and waits until the gate opens.
struct Faulty {
    inner: InferenceEncoder,
    faults: Arc<Faults>,
}

struct Faults {
    gate_word: i64,
    boom_word: i64,
    poison_word: i64,
    rendezvous: usize,
    meeting: Mutex<(usize, u64)>,
    met: Condvar,
    /// Names of the threads whose pass panicked, and passes that met no one in time.
    panicked: Mutex<Vec<String>>,
    lonely: Mutex<usize>,
    entered: Mutex<Sender<()>>,
    open: Mutex<Receiver<()>>,
}

/// The test's side of [`Faults`] or [`tokenize_gate`]: sees passes or tokenisations
/// reach the gate, and opens it.
struct Gate {
    entered: Receiver<()>,
    open: Sender<()>,
}

impl Gate {
    /// Waits until a pass (or tokenisation) is held at the gate.
    fn wait_entered(&self) {
        self.entered
            .recv_timeout(PATIENCE)
            .expect("a pass reaches the gate");
    }

    /// Lets one held pass (or tokenisation) go on.
    fn open(&self) {
        self.open.send(()).unwrap();
    }
}

impl Faults {
    fn new(rendezvous: usize) -> (Arc<Self>, Gate) {
        let (entered_tx, entered) = channel();
        let (open, open_rx) = channel();
        let faults = Arc::new(Self {
            gate_word: word_id(GATE),
            boom_word: word_id(BOOM),
            poison_word: word_id(POISON),
            rendezvous,
            meeting: Mutex::new((0, 0)),
            met: Condvar::new(),
            panicked: Mutex::new(Vec::new()),
            lonely: Mutex::new(0),
            entered: Mutex::new(entered_tx),
            open: Mutex::new(open_rx),
        });
        (faults, Gate { entered, open })
    }

    /// Waits until `rendezvous` passes are here (false if they did not come in time).
    fn meet(&self) -> bool {
        let mut meeting = self.meeting.lock().unwrap();
        let generation = meeting.1;
        meeting.0 += 1;
        if meeting.0 == self.rendezvous {
            *meeting = (0, generation + 1);
            self.met.notify_all();
            return true;
        }
        let (mut meeting, waited) = self
            .met
            .wait_timeout_while(meeting, PATIENCE, |m| m.1 == generation)
            .unwrap();
        if waited.timed_out() {
            meeting.0 -= 1;
            return false;
        }
        true
    }

    fn panicked_threads(&self) -> BTreeSet<String> {
        self.panicked.lock().unwrap().iter().cloned().collect()
    }

    fn wrap(self: &Arc<Self>) -> impl FnOnce(InferenceEncoder) -> Box<dyn Embedder> + Send + use<> {
        let faults = self.clone();
        move |inner| Box::new(Faulty { inner, faults })
    }
}

impl Embedder for Faulty {
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn device(&self) -> tch::Device {
        self.inner.device()
    }

    fn embed_pass(&self, items: &[&TokenIds]) -> Vec<f32> {
        let holds = |id: i64| items.iter().any(|t| t.ids.contains(&id));
        let f = &self.faults;
        if holds(f.gate_word) {
            f.entered.lock().unwrap().send(()).unwrap();
            let opened = f.open.lock().unwrap().recv_timeout(PATIENCE);
            assert!(opened.is_ok(), "the test never opened the gate");
        }
        if holds(f.boom_word) {
            // Recorded before the meeting: once the request's reply is out (sent by the
            // first pass to panic), every pass that met has been recorded.
            let name = std::thread::current().name().unwrap_or("?").to_owned();
            f.panicked.lock().unwrap().push(name.clone());
            if !f.meet() {
                *f.lonely.lock().unwrap() += 1;
            }
            panic!("injected fault on {name}");
        }
        let mut values = self.inner.embed_pass(items);
        let dim = self.inner.dim();
        for (i, t) in items.iter().enumerate() {
            if t.ids.contains(&f.poison_word) {
                values[i * dim] = f32::NAN;
            }
        }
        values
    }
}

struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// One HTTP response.
struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

fn one_worker() -> EncodeOptions {
    EncodeOptions {
        workers: 1,
        ..EncodeOptions::for_device(Device::Cpu)
    }
}

impl Server {
    fn start(config: ServeConfig) -> Self {
        Self::start_with(config, one_worker(), |e| Box::new(e))
    }

    fn start_with(
        config: ServeConfig,
        options: EncodeOptions,
        wrap: impl FnOnce(InferenceEncoder) -> Box<dyn Embedder> + Send + 'static,
    ) -> Self {
        Self::start_seams(config, options, wrap, None)
    }

    /// A server with one worker whose passes run through `faults`.
    fn start_faulty(config: ServeConfig, faults: &Arc<Faults>) -> Self {
        Self::start_with(config, one_worker(), faults.wrap())
    }

    /// A server with one worker, each tokenisation preceded by `hook`.
    fn start_hooked(config: ServeConfig, hook: TokenizeHook) -> Self {
        Self::start_seams(config, one_worker(), |e| Box::new(e), Some(hook))
    }

    /// A server on a runtime of two threads, its passes run by `wrap(encoder)` and each
    /// tokenisation preceded by `hook`.
    fn start_seams(
        config: ServeConfig,
        options: EncodeOptions,
        wrap: impl FnOnce(InferenceEncoder) -> Box<dyn Embedder> + Send + 'static,
        hook: Option<TokenizeHook>,
    ) -> Self {
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
                serve_with(listener, encoder, wrap, hook, options, config, async {
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
        let reply = self.reply(method, path, body, content_type);
        (reply.status, reply.body)
    }

    /// A client of this server for another thread.
    fn client(&self) -> Server {
        Server {
            addr: self.addr,
            stop: None,
            thread: None,
        }
    }

    /// Runs `request` with a client of this server on a new thread; what it returns comes
    /// on the channel, so that the test can wait for it with a timeout.
    fn on_client_thread<T: Send + 'static>(
        &self,
        request: impl FnOnce(Server) -> T + Send + 'static,
    ) -> Receiver<T> {
        let (tx, rx) = channel();
        let client = self.client();
        std::thread::spawn(move || {
            let _ = tx.send(request(client));
        });
        rx
    }

    fn reply(&self, method: &str, path: &str, body: &[u8], content_type: &str) -> Reply {
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
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        Reply {
            status,
            head: head.to_owned(),
            body: body.to_owned(),
        }
    }

    fn post(&self, path: &str, body: &str) -> Reply {
        self.reply("POST", path, body.as_bytes(), "application/json")
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

/// A JSON array of numbers as float32 values.
fn floats(v: &serde_json::Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn norm(v: &serde_json::Value) -> f64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap().powi(2))
        .sum::<f64>()
        .sqrt()
}

/// A tokenisation hook that holds each request with a text equal to `hold` at a gate (the
/// tokenisation's counterpart of [`Faults`]'s gate word), and the test's side of it. A held
/// tokenisation waits at most twice the patience, longer than a client's read timeout, so
/// an answer that cannot come fails the test before the gate would open by itself.
fn tokenize_gate(hold: &'static str) -> (TokenizeHook, Gate) {
    let (entered_tx, entered) = channel();
    let (open, open_rx) = channel();
    let entered_tx = Mutex::new(entered_tx);
    let open_rx = Mutex::new(open_rx);
    let hook: TokenizeHook = Arc::new(move |texts: &[String]| {
        if texts.iter().any(|t| t == hold) {
            entered_tx.lock().unwrap().send(()).unwrap();
            let _ = open_rx.lock().unwrap().recv_timeout(2 * PATIENCE);
        }
    });
    (hook, Gate { entered, open })
}

/// Tokenising runs off the HTTP runtime's threads: with as many requests held inside their
/// tokenisation as the runtime has threads (two), /health is still answered, and the held
/// requests finish once let go. When the handlers tokenised on the runtime's own threads,
/// /health got no answer here until the test's patience ran out.
#[test]
fn requests_held_in_tokenisation_leave_the_server_answering() {
    let (hook, gate) = tokenize_gate("warte");
    let server = Server::start_hooked(
        ServeConfig {
            max_concurrent_tokenizations: 2,
            ..ServeConfig::default()
        },
        hook,
    );
    let held: Vec<_> = (0..2)
        .map(|_| {
            let client = server.client();
            std::thread::spawn(move || client.request("POST", "/embed", r#"{"inputs": "warte"}"#))
        })
        .collect();
    for _ in 0..2 {
        gate.wait_entered();
    }
    let health = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        server.request("GET", "/health", "")
    }));
    for _ in 0..2 {
        gate.open();
    }
    let (status, body) = health.expect("/health answered while two tokenisations were held");
    assert_eq!(status, 200, "{body}");
    for h in held {
        let (status, body) = h.join().unwrap();
        assert_eq!(status, 200, "{body}");
    }
}

/// A tokenisation that panics answers its own request 500 with the panic's message, and
/// gives its slot back: with one slot, the next request is tokenised and answered.
#[test]
fn a_panicking_tokenisation_answers_500_and_frees_its_slot() {
    const BREAK: &str = "zerbrich";
    let hook: TokenizeHook = Arc::new(|texts: &[String]| {
        if texts.iter().any(|t| t == BREAK) {
            panic!("planted tokenizer panic");
        }
    });
    let server = Server::start_hooked(
        ServeConfig {
            max_concurrent_tokenizations: 1,
            ..ServeConfig::default()
        },
        hook,
    );
    let (status, body) = server.json("POST", "/embed", r#"{"inputs": "zerbrich"}"#);
    assert_eq!(status, 500, "{body}");
    assert_eq!(
        body["error"].as_str(),
        Some("tokenising the inputs panicked: planted tokenizer panic"),
        "{body}"
    );
    for _ in 0..2 {
        let (status, body) = server.request("POST", "/embed", r#"{"inputs": "hallo welt"}"#);
        assert_eq!(status, 200, "{body}");
    }
}

/// /mine's time bound covers its tokenisation: a /mine whose tokenisation is held past
/// the bound is answered 413 while it is still held. (Before, /mine tokenised before its
/// bound started, and this test waited out its patience.)
#[test]
fn mine_held_in_tokenisation_past_its_bound_answers_413() {
    let (hook, gate) = tokenize_gate("warte");
    let bound = Duration::from_millis(300);
    let server = Server::start_hooked(
        ServeConfig {
            max_mine_time: bound,
            ..ServeConfig::default()
        },
        hook,
    );
    let rx = server.on_client_thread(|client| {
        client.post(
            "/mine",
            r#"{"src": ["warte", "the cat is small"], "tgt": ["the dog is red", "a green house"]}"#,
        )
    });
    gate.wait_entered();
    let reply = rx.recv_timeout(PATIENCE);
    gate.open();
    let reply = reply.expect("/mine is answered at its bound while its tokenisation is held");
    assert_eq!(reply.status, 413, "{}", reply.body);
    assert_eq!(reply.json()["error_type"], "TimeLimit", "{}", reply.body);
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
        let got = floats(row);
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
    assert_requests_total(&metrics, "/mine", 200, 1);
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
        // Above --max-mine-k (64): the search would keep k candidates per sentence and
        // per thread, gigabytes over 10,000-sentence sides.
        (
            "/mine",
            r#"{"src": ["a"], "tgt": ["b"], "k": 65}"#.into(),
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
    // A known path with a method it does not answer: 405, a JSON body, and the Allow
    // header naming the method it does answer.
    for (method, path, allowed) in [("GET", "/embed", "POST"), ("POST", "/health", "GET")] {
        let reply = server.reply(method, path, b"{}", "application/json");
        assert_eq!(reply.status, 405, "{method} {path}: {}", reply.body);
        assert_eq!(
            reply.json()["error_type"],
            "MethodNotAllowed",
            "{}",
            reply.body
        );
        let allow = reply
            .head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("allow:")
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| panic!("{method} {path}: no Allow header in {}", reply.head));
        assert!(
            allow.to_ascii_uppercase().contains(allowed),
            "{method} {path}: {allow}"
        );
    }
    // k up to the bound is accepted (and capped at a side's size by the search).
    let (status, text) =
        server.request("POST", "/mine", r#"{"src": ["a"], "tgt": ["b"], "k": 64}"#);
    assert_eq!(status, 200, "{text}");
    // A too-long text is named by its field and index in the request.
    let long = "the dog ".repeat(40);
    for (path, body, name) in [
        (
            "/similarity",
            format!(r#"{{"inputs": {{"source_sentence": "a", "sentences": ["b", "{long}"]}}}}"#),
            "sentences[1]",
        ),
        (
            "/similarity",
            format!(r#"{{"inputs": {{"source_sentence": "{long}", "sentences": ["b"]}}}}"#),
            "source_sentence",
        ),
        (
            "/mine",
            format!(r#"{{"src": ["a"], "tgt": ["b", "{long}"]}}"#),
            "tgt[1]",
        ),
        (
            "/embed",
            format!(r#"{{"inputs": ["a", "{long}"]}}"#),
            "inputs[1]",
        ),
        (
            "/v1/embeddings",
            format!(r#"{{"input": ["a", "b", "{long}"]}}"#),
            "input[2]",
        ),
    ] {
        let (status, text) = server.request("POST", path, &body);
        assert_eq!(status, 422, "{path}: {text}");
        assert!(
            text.contains(&format!("{name} is longer")),
            "{path}: {text}"
        );
    }
    // One string is named by its field; OpenAI's route, which has no truncate field,
    // does not advise sending one.
    let (_, text) = server.request("POST", "/embed", &format!(r#"{{"inputs": "{long}"}}"#));
    assert!(
        text.contains("inputs is longer") && text.contains("true to cut it"),
        "{text}"
    );
    let (_, text) = server.request(
        "POST",
        "/v1/embeddings",
        &format!(r#"{{"input": "{long}"}}"#),
    );
    assert!(
        text.contains("input is longer") && text.contains("no truncate option"),
        "{text}"
    );
    // /similarity's limit counts its sentences, not the source sentence too.
    let (status, text) = server.request(
        "POST",
        "/similarity",
        r#"{"inputs": {"source_sentence": "a", "sentences": ["b", "c", "d", "e"]}}"#,
    );
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("4 sentences exceed the limit of 3"), "{text}");
    let (status, text) = server.request(
        "POST",
        "/similarity",
        r#"{"inputs": {"source_sentence": "a", "sentences": ["b", "c", "d"]}}"#,
    );
    assert_eq!(status, 200, "{text}");
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

/// The value of an unlabelled metric in Prometheus text.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Checks that `metrics` (Prometheus text) counts `count` requests to `route` answered
/// `status`.
fn assert_requests_total(metrics: &str, route: &str, status: u16, count: u32) {
    let line = format!("lase_requests_total{{route=\"{route}\",status=\"{status}\"}} {count}");
    assert!(metrics.contains(&line), "{metrics}");
}

/// `{"inputs": [...]}` for /embed.
fn embed_body(sentences: &[&str]) -> String {
    serde_json::json!({ "inputs": sentences }).to_string()
}

/// The library's vectors for `sentences` (the model's raw output).
fn reference_rows(sentences: &[&str]) -> Vec<Vec<f32>> {
    common::rows(&tiny_model().encode(sentences, 8).unwrap())
}

/// Checks /embed's rows against the library's normalised vectors.
fn assert_rows(reply: &Reply, sentences: &[&str]) {
    assert_eq!(reply.status, 200, "{}", reply.body);
    let got = reply.json();
    let got = got.as_array().unwrap();
    assert_eq!(got.len(), sentences.len());
    for (row, want) in got.iter().zip(reference_rows(sentences)) {
        let row = floats(row);
        assert!(common::cosine(&row, &want) > 0.99999, "{sentences:?}");
    }
}

/// Sends /embed a sentence holding [`GATE`] from another thread and waits until its pass
/// is held at the gate; the handle gives its reply once the gate opens.
fn hold_the_worker(server: &Server, gate: &Gate) -> std::thread::JoinHandle<Reply> {
    let client = server.client();
    let held = std::thread::spawn(move || {
        client.post("/embed", &embed_body(&[&format!("the dog {GATE}")]))
    });
    gate.wait_entered();
    held
}

#[test]
fn full_queue_answers_429_with_retry_after() {
    // One worker held at the gate and a queue of one: of five more requests exactly one
    // is queued and four are refused at once, whatever order they arrive in.
    let (faults, gate) = Faults::new(1);
    let server = Server::start_faulty(
        ServeConfig {
            max_queued_requests: 1,
            ..Default::default()
        },
        &faults,
    );
    let held = hold_the_worker(&server, &gate);
    let sentences = [
        "the cat",
        "a dog",
        "the red house",
        "a big mat",
        "the small cat runs",
    ];
    let (tx, rx) = channel();
    for sentence in sentences {
        let client = server.client();
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send((sentence, client.post("/embed", &embed_body(&[sentence]))));
        });
    }
    for _ in 0..4 {
        let (sentence, reply) = rx
            .recv_timeout(PATIENCE)
            .expect("four requests are refused while the worker is held");
        assert_eq!(reply.status, 429, "{sentence}: {}", reply.body);
        assert_eq!(
            reply.header("retry-after").as_deref(),
            Some("1"),
            "{}",
            reply.head
        );
        let body = reply.json();
        assert_eq!(body["error_type"], "Overloaded", "{body}");
        assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    assert!(
        matches!(rx.try_recv(), Err(std::sync::mpsc::TryRecvError::Empty)),
        "a fifth request was answered while the worker was held"
    );
    gate.open();
    let (sentence, queued) = rx.recv_timeout(PATIENCE).unwrap();
    assert_rows(&queued, &[sentence]);
    assert_rows(&held.join().unwrap(), &[&format!("the dog {GATE}")]);
    let (_, metrics) = server.request("GET", "/metrics", "");
    assert_requests_total(&metrics, "/embed", 429, 4);
}

#[test]
fn mine_past_its_time_bound_answers_413_and_its_queued_work_is_dropped() {
    // The worker is held at the gate, so a /mine request can only wait in the queue: it
    // must be answered 413 at its bound while the gate is still shut, and once the gate
    // opens, its six sentences must be skipped, not embedded for nobody.
    let (faults, gate) = Faults::new(1);
    let bound = Duration::from_millis(400);
    let server = Server::start_faulty(
        ServeConfig {
            max_mine_time: bound,
            ..Default::default()
        },
        &faults,
    );
    let held = hold_the_worker(&server, &gate);
    let rx = server.on_client_thread(|client| {
        let started = std::time::Instant::now();
        let reply = client.post(
            "/mine",
            r#"{"src": ["the dog is red", "the cat is small", "a green house"], "tgt": ["a green house", "the dog is red", "the cat is small"]}"#,
        );
        (reply, started.elapsed())
    });
    let (reply, took) = rx
        .recv_timeout(PATIENCE)
        .expect("/mine is answered at its bound while the worker is still held");
    assert_eq!(reply.status, 413, "{}", reply.body);
    let body = reply.json();
    assert_eq!(body["error_type"], "TimeLimit", "{body}");
    assert!(took >= bound, "answered after {took:?}, before its bound");
    gate.open();
    assert_rows(&held.join().unwrap(), &[&format!("the dog {GATE}")]);
    // A request queued after the /mine jobs: when it is answered, they have been taken.
    assert_rows(
        &server.post("/embed", &embed_body(&["the cat"])),
        &["the cat"],
    );
    let (_, metrics) = server.request("GET", "/metrics", "");
    assert_eq!(metric(&metrics, "lase_sentences_abandoned_total"), 6.0);
    assert_requests_total(&metrics, "/mine", 413, 1);
    eprintln!("/mine bound {bound:?}: answered 413 after {took:?}; 6 sentences skipped");
}

/// Writes `request` as it is on a new connection, reads until the server closes it, and
/// checks the answer: `status` with a JSON error of `error_type`. Returns how long that
/// took from before connecting.
fn assert_raw_error(addr: SocketAddr, request: &[u8], status: u16, error_type: &str) -> Duration {
    let started = std::time::Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(request).unwrap();
    let mut response = Vec::new();
    let _ = s.read_to_end(&mut response);
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with(&format!("HTTP/1.1 {status}")), "{text}");
    let body: serde_json::Value =
        serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["error_type"], error_type, "{body}");
    took
}

/// Slow clients (slowloris) hold a connection no longer than the limits: headers that
/// never finish are cut off at the header timeout, a body that stops coming gets 408 at
/// the body timeout, and past the connection cap new clients wait for a free slot.
#[test]
fn slow_clients_are_cut_off_at_their_timeouts() {
    use lase::serve::connections::ConnectionLimits;
    let limits = ConnectionLimits {
        header_read_timeout: Duration::from_millis(500),
        body_read_timeout: Duration::from_millis(500),
        write_stall_timeout: Duration::from_millis(500),
        max_connections: 1,
    };
    let server = Server::start(ServeConfig {
        connections: limits,
        ..Default::default()
    });
    // Headers that never end: the server closes the connection at the header timeout.
    // Clocks start before the connection exists: the server's timer cannot start earlier.
    let opened = std::time::Instant::now();
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.set_read_timeout(Some(PATIENCE)).unwrap();
    slow.write_all(b"POST /embed HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaa")
        .unwrap();
    // With one connection allowed, a valid request waits until the slow one is gone.
    let rx = server.on_client_thread(move |client| {
        let reply = client.post("/embed", &embed_body(&["the cat"]));
        (reply, opened.elapsed())
    });
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest); // returns when the server closes it
    let held = opened.elapsed();
    assert!(
        held >= limits.header_read_timeout && held < PATIENCE,
        "the slow connection was closed after {held:?}"
    );
    let (reply, waited) = rx
        .recv_timeout(PATIENCE)
        .expect("the valid request is answered");
    assert_rows(&reply, &["the cat"]);
    // Its connection can only be accepted once the slow one has been closed.
    assert!(
        waited >= limits.header_read_timeout,
        "the valid request was answered {waited:?} after the slow client connected, before its slot was free"
    );
    // A body that stops half-way: 408 with a JSON error at the body timeout.
    let took = assert_raw_error(
        server.addr,
        b"POST /embed HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"inputs\": [\"the",
        408,
        "Timeout",
    );
    assert!(
        took >= limits.body_read_timeout && took < PATIENCE,
        "{took:?}"
    );
    // A body declared larger than --max-body-bytes: 413 with a JSON error at once, not
    // 408 at the body timeout.
    let refused_in = assert_raw_error(
        server.addr,
        b"POST /embed HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\n{}",
        413,
        "PayloadTooLarge",
    );
    assert!(
        refused_in < limits.body_read_timeout,
        "answered after {refused_in:?}"
    );
    eprintln!(
        "slow headers closed after {held:?}; the valid request behind them answered {waited:?} after the slow client connected; \
         stalled body answered 408 after {took:?}; a body declared too large answered 413 after {refused_in:?}"
    );
}

/// A client that sends requests and never reads the answers fills the socket's buffers;
/// the server's write then blocks, and at the write-stall timeout the connection is closed
/// and its slot (one connection allowed here) goes to the next client.
#[test]
fn a_client_that_never_reads_is_cut_off_at_the_write_timeout() {
    use lase::serve::connections::ConnectionLimits;
    let limits = ConnectionLimits {
        header_read_timeout: PATIENCE,
        body_read_timeout: PATIENCE,
        write_stall_timeout: Duration::from_millis(500),
        max_connections: 1,
    };
    let server = Server::start(ServeConfig {
        connections: limits,
        ..Default::default()
    });
    // Pipelined GET /info requests, written until the connection is closed; none of the
    // answers is read.
    let mut deaf = TcpStream::connect(server.addr).unwrap();
    let (closed_tx, closed_rx) = channel();
    std::thread::spawn(move || {
        let request = b"GET /info HTTP/1.1\r\nHost: localhost\r\n\r\n".repeat(64);
        let mut sent = 0usize;
        while deaf.write_all(&request).is_ok() {
            sent += request.len();
        }
        let _ = closed_tx.send(sent);
    });
    // The next client can only be served once the deaf one's connection is closed.
    let started = std::time::Instant::now();
    let rx = server.on_client_thread(|client| client.post("/embed", &embed_body(&["the cat"])));
    let sent = closed_rx
        .recv_timeout(PATIENCE)
        .expect("the server closes the connection of a client that never reads");
    let reply = rx
        .recv_timeout(PATIENCE)
        .expect("the next client is answered once the deaf one is gone");
    assert_rows(&reply, &["the cat"]);
    let waited = started.elapsed();
    assert!(
        waited >= limits.write_stall_timeout && waited < Duration::from_secs(10),
        "answered after {waited:?}: not at the deaf client's write-stall timeout ({:?})",
        limits.write_stall_timeout
    );
    eprintln!(
        "the deaf client sent {sent} bytes before its connection was closed; the next client was answered after {waited:?}"
    );
}

#[test]
fn concurrent_requests_are_all_answered() {
    let server = Server::start(ServeConfig::default());
    let sentences: Vec<String> = (0..16)
        .map(|i| {
            let w = common::TINY_WORDS;
            format!("the {} {}", w[i % w.len()], w[(3 * i + 1) % w.len()])
        })
        .collect();
    let handles: Vec<_> = sentences
        .iter()
        .map(|s| {
            let client = server.client();
            let s = s.clone();
            std::thread::spawn(move || {
                let reply = client.post("/embed", &embed_body(&[&s]));
                assert_rows(&reply, &[&s]);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let (_, metrics) = server.request("GET", "/metrics", "");
    assert_eq!(
        metric(&metrics, "lase_sentences_embedded_total"),
        sentences.len() as f64
    );
}

/// A batcher of one worker whose passes run through `faults`, its pool's thread, and the
/// metrics it records.
fn faulty_batcher(faults: &Arc<Faults>) -> (Batcher, std::thread::JoinHandle<()>, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::default());
    let (batcher, pool) = Batcher::start(
        (faults.wrap())(InferenceEncoder::new(tiny_model())),
        one_worker(),
        16_384,
        64,
        metrics.clone(),
    );
    (batcher, pool, metrics)
}

/// Jobs queued while the worker is held are coalesced into one run when it is free.
#[test]
fn queued_jobs_are_coalesced_into_one_run() {
    let (faults, gate) = Faults::new(1);
    let (batcher, pool, metrics) = faulty_batcher(&faults);
    let model = tiny_model();
    let first = [format!("the dog {GATE}")];
    let held = batcher.submit(model.tokenize(&first).unwrap()).unwrap();
    gate.wait_entered();
    let jobs: Vec<Vec<&str>> = vec![
        vec!["the cat"],
        vec!["a dog", "the red house"],
        vec!["a big mat"],
        vec!["the small cat runs", "der hund", "das haus ist rot"],
        vec!["blue"],
        vec!["the cat sat on the mat"],
        vec!["die katze"],
        vec!["green and blue"],
    ];
    let receivers: Vec<_> = jobs
        .iter()
        .map(|j| batcher.submit(model.tokenize(j).unwrap()).unwrap())
        .collect();
    gate.open();
    assert_eq!(held.blocking_recv().unwrap().unwrap().size(), [1, 16]);
    for (sentences, rx) in jobs.iter().zip(receivers) {
        let got = rx.blocking_recv().unwrap().unwrap();
        let want = model.encode(sentences, 32).unwrap();
        let diff = (got - want).abs().max().double_value(&[]);
        assert!(diff < 1e-5, "{sentences:?}: {diff}");
    }
    let text = metrics.render();
    // The held job's run, then one run for all eight queued jobs (11 sentences).
    assert_eq!(metric(&text, "lase_batch_sentences_count"), 2.0, "{text}");
    assert_eq!(metric(&text, "lase_batch_sentences_sum"), 12.0, "{text}");
    // Each run fits one forward pass: 1 sentence, then 11 padded to the longest of them.
    assert_eq!(
        metric(&text, "lase_forward_pass_sentences_count"),
        2.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, "lase_forward_pass_sentences_sum"),
        12.0,
        "{text}"
    );
    let lengths = |sentences: &[&str]| -> Vec<usize> {
        model
            .tokenize(sentences)
            .unwrap()
            .iter()
            .map(|t| t.len())
            .collect()
    };
    let held_len = model.tokenize(&first).unwrap()[0].len();
    let queued: Vec<usize> = jobs.iter().flat_map(|j| lengths(j)).collect();
    let real = held_len + queued.iter().sum::<usize>();
    let padded = held_len + queued.len() * queued.iter().max().unwrap();
    assert!(
        padded > real,
        "the queued sentences differ in length: {queued:?}"
    );
    assert_eq!(
        metric(&text, "lase_forward_tokens_total{kind=\"real\"}"),
        real as f64,
        "{text}"
    );
    assert_eq!(
        metric(&text, "lase_forward_tokens_total{kind=\"padded\"}"),
        padded as f64,
        "{text}"
    );
    drop(batcher);
    pool.join().unwrap();
}

/// A pass shared by two jobs panics: the jobs are retried apart, and only the one whose
/// own pass panics gets the error.
#[test]
fn only_the_job_whose_pass_panics_fails() {
    let (faults, gate) = Faults::new(1);
    let (batcher, pool, metrics) = faulty_batcher(&faults);
    let model = tiny_model();
    let held = batcher
        .submit(model.tokenize(&[format!("the dog {GATE}")]).unwrap())
        .unwrap();
    gate.wait_entered();
    let bad = batcher
        .submit(model.tokenize(&[format!("the {BOOM}")]).unwrap())
        .unwrap();
    let good_sentences = ["the cat is small", "a red house"];
    let good = batcher
        .submit(model.tokenize(&good_sentences).unwrap())
        .unwrap();
    gate.open();
    assert_eq!(held.blocking_recv().unwrap().unwrap().size(), [1, 16]);
    let error = bad.blocking_recv().unwrap().unwrap_err();
    assert!(error.to_string().contains("injected fault"), "{error}");
    let got = good.blocking_recv().unwrap().unwrap();
    let want = model.encode(&good_sentences, 32).unwrap();
    assert!((got - want).abs().max().double_value(&[]) < 1e-5);
    let text = metrics.render();
    // Both jobs were in one run (and one pass, which panicked), then the bad job alone
    // panicked again.
    assert_eq!(metric(&text, "lase_batch_sentences_count"), 2.0, "{text}");
    assert_eq!(metric(&text, "lase_inference_panics_total"), 2.0, "{text}");
    // The worker goes on.
    let after = batcher.submit(model.tokenize(&["blue"]).unwrap()).unwrap();
    assert_eq!(after.blocking_recv().unwrap().unwrap().size(), [1, 16]);
    drop(batcher);
    pool.join().unwrap();
}

/// Two workers, passes of one sentence: a request of two marked sentences makes both
/// workers panic (each pass waits for the other's before panicking, so each worker must
/// hold one). The request gets a 500 with a JSON body; later requests get correct rows;
/// a second round needs both workers alive again.
#[test]
fn a_panicking_pass_answers_500_and_every_worker_survives() {
    let (faults, _gate) = Faults::new(2);
    let options = EncodeOptions {
        batch_size: 1,
        max_batch_tokens: 512,
        workers: 2,
    };
    let server = Server::start_with(ServeConfig::default(), options, faults.wrap());
    let workers: BTreeSet<String> = ["lase-inference-0", "lase-inference-1"]
        .map(String::from)
        .into();
    for round in 1..=2 {
        let reply = server.post("/embed", &embed_body(&[BOOM, &format!("the {BOOM}")]));
        assert_eq!(reply.status, 500, "round {round}: {}", reply.body);
        let body = reply.json();
        assert_eq!(body["error_type"], "Backend", "{body}");
        assert!(
            body["error"].as_str().unwrap().contains("panicked"),
            "{body}"
        );
        assert_eq!(faults.panicked_threads(), workers, "round {round}");
        assert_eq!(
            *faults.lonely.lock().unwrap(),
            0,
            "a pass met no other worker"
        );
        assert_eq!(faults.panicked.lock().unwrap().len(), 2 * round);
        let sentences = ["the dog is red", "der hund", "a small house"];
        assert_rows(&server.post("/embed", &embed_body(&sentences)), &sentences);
        let sentences = ["the cat sat on the mat"];
        assert_rows(&server.post("/", &embed_body(&sentences)), &sentences);
    }
    assert_eq!(server.request("GET", "/health", "").0, 200);
    // The second pass of a round to panic may still be unwinding after the reply (the
    // first one answered it): wait for its count rather than assume it is in.
    let since = std::time::Instant::now();
    let metrics = loop {
        let (_, metrics) = server.request("GET", "/metrics", "");
        if metric(&metrics, "lase_inference_panics_total") == 4.0 {
            break metrics;
        }
        assert!(since.elapsed() < PATIENCE, "{metrics}");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_requests_total(&metrics, "/embed", 500, 2);
}

/// A pass that returns NaN answers its request with a 500 (JSON would carry NaN as
/// `null` in a 200), on every route; a request without the marked word is answered.
#[test]
fn a_pass_returning_nan_answers_500_not_nulls() {
    let (faults, _gate) = Faults::new(1);
    let server = Server::start_faulty(ServeConfig::default(), &faults);
    let poisoned = format!("the {POISON} dog");
    for (path, body) in [
        ("/embed", embed_body(&["a cat", &poisoned])),
        ("/v1/embeddings", serde_json::json!({ "input": [&poisoned] }).to_string()),
        (
            "/similarity",
            serde_json::json!({ "inputs": { "source_sentence": "a cat", "sentences": [&poisoned] } })
                .to_string(),
        ),
        ("/mine", serde_json::json!({ "src": ["a cat"], "tgt": [&poisoned] }).to_string()),
    ] {
        let reply = server.post(path, &body);
        assert_eq!(reply.status, 500, "{path}: {}", reply.body);
        let body = reply.json();
        assert_eq!(body["error_type"], "Backend", "{path}: {body}");
        assert!(body["error"].as_str().unwrap().contains("non-finite"), "{path}: {body}");
    }
    let sentences = ["the dog is red", "a cat"];
    assert_rows(&server.post("/embed", &embed_body(&sentences)), &sentences);
}

#[test]
fn graceful_shutdown_finishes_the_request_in_flight() {
    let (faults, gate) = Faults::new(1);
    let mut server = Server::start_faulty(ServeConfig::default(), &faults);
    let addr = server.addr;
    let sentences = [
        format!("the dog {GATE}"),
        "a cat".into(),
        "the red house".into(),
    ];
    let in_flight = {
        let client = server.client();
        let body = serde_json::json!({ "inputs": sentences }).to_string();
        std::thread::spawn(move || client.post("/embed", &body))
    };
    // The request is in the worker's hands when the server is told to stop.
    gate.wait_entered();
    server.stop.take().unwrap().send(()).unwrap();
    // Wait until the server has stopped accepting connections, so the request is
    // finished by the shutdown path rather than before it.
    let since = std::time::Instant::now();
    while TcpStream::connect(addr).is_ok() {
        assert!(since.elapsed() < PATIENCE, "still accepting after shutdown");
        std::thread::sleep(Duration::from_millis(5));
    }
    gate.open();
    let reply = in_flight.join().unwrap();
    let sentences: Vec<&str> = sentences.iter().map(String::as_str).collect();
    assert_rows(&reply, &sentences);
    server.thread.take().unwrap().join().unwrap();
    assert!(
        TcpStream::connect(addr).is_err(),
        "still accepting after shutdown"
    );
}

/// Shutdown is bounded: a request stuck in its forward pass (held at the gate) delays the
/// stop by `shutdown_timeout`, not forever; its connection then closes without an answer.
#[test]
fn shutdown_stops_within_its_bound_when_a_request_hangs() {
    let (faults, gate) = Faults::new(1);
    let bound = Duration::from_millis(800);
    let config = ServeConfig {
        shutdown_timeout: bound,
        ..ServeConfig::default()
    };
    let mut server = Server::start_faulty(config, &faults);
    let addr = server.addr;
    let in_flight = std::thread::spawn(move || {
        let body = serde_json::json!({ "inputs": [format!("the dog {GATE}")] }).to_string();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let head = format!(
            "POST /embed HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body.as_bytes()).unwrap();
        let mut response = Vec::new();
        let _ = s.read_to_end(&mut response);
        response
    });
    gate.wait_entered();
    let signalled = std::time::Instant::now();
    server.stop.take().unwrap().send(()).unwrap();
    // Joined on a watcher thread, so that a server that never stops fails the test
    // instead of hanging it.
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let thread = server.thread.take().unwrap();
    std::thread::spawn(move || {
        let _ = done_tx.send(thread.join().is_ok());
    });
    let joined = done_rx
        .recv_timeout(bound + Duration::from_secs(20))
        .expect("the server did not stop within 20 s of its shutdown bound");
    assert!(joined, "the server thread panicked");
    let stopped_after = signalled.elapsed();
    // The gate is still shut: only the bound can have ended the server.
    assert!(stopped_after >= bound, "stopped after {stopped_after:?}");
    assert!(
        stopped_after < bound + Duration::from_secs(20),
        "stopped after {stopped_after:?}"
    );
    let response = in_flight.join().unwrap();
    assert!(
        response.is_empty(),
        "the held request got {:?}",
        String::from_utf8_lossy(&response)
    );
    eprintln!(
        "shutdown with a request held: stopped {stopped_after:?} after the signal (bound {bound:?})"
    );
    // The worker thread stays held: the server no longer waits for it, and releasing it
    // after its runtime is gone would only run a pass nobody reads. It ends with the
    // test process.
    std::mem::forget(gate);
}

/// The pipelined pool (two threads, passes of a few tokens, so runs span several passes
/// and one run's passes interleave with the next run's) returns every job's own rows.
#[test]
fn pooled_passes_route_every_row_to_its_job() {
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
    let metrics = Arc::new(Metrics::default());
    let (batcher, pool) = Batcher::start(
        Box::new(InferenceEncoder::new(tiny_model())),
        options,
        60,
        100,
        metrics,
    );
    let receivers: Vec<_> = jobs
        .iter()
        .map(|sentences| {
            let tokens = reference.tokenize(sentences).unwrap();
            batcher.submit(tokens).unwrap()
        })
        .collect();
    for (sentences, rx) in jobs.iter().zip(receivers) {
        let got = rx.blocking_recv().unwrap().unwrap();
        let want = reference.encode(sentences, 32).unwrap();
        assert_eq!(got.size(), want.size());
        let diff = (got - want).abs().max().double_value(&[]);
        assert!(diff < 1e-5, "{sentences:?}: {diff}");
    }
    // An empty job is answered at once with no rows.
    let empty = batcher
        .submit(Vec::new())
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    assert_eq!(empty.size(), [0, 16]);
    drop(batcher);
    pool.join().unwrap();
}
