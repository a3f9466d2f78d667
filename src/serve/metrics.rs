//! Prometheus metrics kept with atomics: request counts by route and status, request
//! latency, run and forward-pass size histograms, the padding of forward passes, queue
//! depth.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];
const BATCH_BUCKETS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// A cumulative histogram.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    sum_micros: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: f64) {
        for (b, c) in self.bounds.iter().zip(&self.counts) {
            if value <= *b {
                c.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.sum_micros
            .fetch_add((value * 1e6) as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn render(&self, name: &str, help: &str, out: &mut String) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (b, c) in self.bounds.iter().zip(&self.counts) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{b}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        let n = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {n}");
        let _ = writeln!(
            out,
            "{name}_sum {}",
            self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(out, "{name}_count {n}");
    }
}

/// All server metrics.
#[derive(Debug)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    pub latency_seconds: Histogram,
    pub batch_sentences: Histogram,
    /// Sentences per forward pass (a coalesced run is cut into length-sorted passes);
    /// every pass tried counts, a failed pass's per-job retries too.
    pub pass_sentences: Histogram,
    /// Tokens the forward passes carried: the sentences' own, and with padding to each
    /// pass's longest sentence (their ratio is the compute spent on padding).
    pub pass_tokens: AtomicU64,
    pub pass_padded_tokens: AtomicU64,
    pub queue_depth: AtomicU64,
    pub sentences_embedded: AtomicU64,
    /// Forward passes (or worker loops) that panicked and were caught.
    pub inference_panics: AtomicU64,
    /// Sentences dropped before their forward pass because nobody waits for them any
    /// more (the client went away, or the request hit its time bound).
    pub sentences_abandoned: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: Mutex::new(BTreeMap::new()),
            latency_seconds: Histogram::new(&LATENCY_BUCKETS),
            batch_sentences: Histogram::new(&BATCH_BUCKETS),
            pass_sentences: Histogram::new(&BATCH_BUCKETS),
            pass_tokens: AtomicU64::new(0),
            pass_padded_tokens: AtomicU64::new(0),
            queue_depth: AtomicU64::new(0),
            sentences_embedded: AtomicU64::new(0),
            inference_panics: AtomicU64::new(0),
            sentences_abandoned: AtomicU64::new(0),
        }
    }
}

impl Metrics {
    pub fn record_request(&self, route: &str, status: u16, seconds: f64) {
        *self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((route.to_owned(), status))
            .or_insert(0) += 1;
        self.latency_seconds.observe(seconds);
    }

    /// Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP lase_requests_total HTTP requests by route and status.\n# TYPE lase_requests_total counter\n");
        for ((route, status), n) in self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "lase_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        self.latency_seconds.render(
            "lase_request_duration_seconds",
            "Request latency.",
            &mut out,
        );
        self.batch_sentences.render(
            "lase_batch_sentences",
            "Sentences per coalesced inference batch.",
            &mut out,
        );
        self.pass_sentences.render(
            "lase_forward_pass_sentences",
            "Sentences per forward pass tried (retries of a failed pass included).",
            &mut out,
        );
        let _ = writeln!(
            out,
            "# HELP lase_forward_tokens_total Tokens in forward passes: the sentences' own (real), and with padding to each pass's longest sentence (padded).\n# TYPE lase_forward_tokens_total counter\nlase_forward_tokens_total{{kind=\"real\"}} {}\nlase_forward_tokens_total{{kind=\"padded\"}} {}",
            self.pass_tokens.load(Ordering::Relaxed),
            self.pass_padded_tokens.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP lase_queue_depth Requests waiting for the inference worker.\n# TYPE lase_queue_depth gauge\nlase_queue_depth {}",
            self.queue_depth.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP lase_sentences_embedded_total Sentences embedded.\n# TYPE lase_sentences_embedded_total counter\nlase_sentences_embedded_total {}",
            self.sentences_embedded.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP lase_inference_panics_total Inference passes that panicked (caught; the request got a 500).\n# TYPE lase_inference_panics_total counter\nlase_inference_panics_total {}",
            self.inference_panics.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP lase_sentences_abandoned_total Sentences skipped before their forward pass: their request was gone (client disconnected or time bound hit).\n# TYPE lase_sentences_abandoned_total counter\nlase_sentences_abandoned_total {}",
            self.sentences_abandoned.load(Ordering::Relaxed)
        );
        out
    }
}
