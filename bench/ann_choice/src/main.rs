//! usearch vs hnsw_rs on real sentence embeddings: build and query time with two
//! threads, recall@k against exact search, index memory. Same HNSW parameters for both
//! (M = 16, ef_construction = 128, ef_search = 64 and 128), inner product on unit vectors.
//!
//! Usage: ann_choice EMB.npy [ROWS] [QUERY_ROWS]: of the distinct rows among the first
//! ROWS, the last QUERY_ROWS query an index of the others (float32 .npy, rows
//! L2-normalised here).

use std::io::Read;
use std::time::Instant;

use hnsw_rs::prelude::{Distance, Hnsw};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

const K: usize = 4;
const M: usize = 16;
const EF_CONSTRUCTION: usize = 128;
const THREADS: usize = 2;

fn read_npy_rows(path: &str, rows: usize) -> (Vec<f32>, usize) {
    let mut f = std::fs::File::open(path).expect("open npy");
    let mut head = [0u8; 10];
    f.read_exact(&mut head).unwrap();
    assert_eq!(&head[..6], b"\x93NUMPY", "{path}: not an .npy file");
    let len = u16::from_le_bytes([head[8], head[9]]) as usize;
    let mut dict = vec![0u8; len];
    f.read_exact(&mut dict).unwrap();
    let dict = String::from_utf8_lossy(&dict).to_string();
    assert!(dict.contains("'<f4'") && dict.contains("False"), "{dict}");
    let shape = &dict[dict.find("'shape': (").unwrap() + 10..];
    let dims: Vec<usize> = shape[..shape.find(')').unwrap()]
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let (total, cols) = (dims[0], dims[1]);
    assert!(rows <= total, "{path} has {total} rows");
    let mut bytes = vec![0u8; rows * cols * 4];
    f.read_exact(&mut bytes).unwrap();
    // Distinct rows only: duplicate sentences make "the" nearest neighbour ambiguous.
    let mut seen = std::collections::HashSet::new();
    let mut v: Vec<f32> = bytes
        .chunks_exact(cols * 4)
        .filter(|row| seen.insert(row.to_vec()))
        .flat_map(|row| row.chunks_exact(4))
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    for row in v.chunks_exact_mut(cols) {
        let n = row.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        row.iter_mut().for_each(|x| *x /= n);
    }
    (v, cols)
}

fn exact_top_k(base: &[f32], queries: &[f32], dim: usize) -> Vec<Vec<usize>> {
    let chunk = queries.len() / dim / THREADS + 1;
    std::thread::scope(|s| {
        let handles: Vec<_> = queries
            .chunks(chunk * dim)
            .map(|qs| {
                s.spawn(move || {
                    qs.chunks_exact(dim)
                        .map(|q| {
                            let mut best: Vec<(f32, usize)> = Vec::with_capacity(K + 1);
                            for (j, b) in base.chunks_exact(dim).enumerate() {
                                let d: f32 = q.iter().zip(b).map(|(a, b)| a * b).sum();
                                if best.len() < K || d > best[K - 1].0 {
                                    best.push((d, j));
                                    best.sort_by(|a, b| b.0.total_cmp(&a.0));
                                    best.truncate(K);
                                }
                            }
                            best.into_iter().map(|(_, j)| j).collect()
                        })
                        .collect::<Vec<Vec<usize>>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

fn recall(found: &[Vec<usize>], exact: &[Vec<usize>]) -> f64 {
    let hits: usize = found
        .iter()
        .zip(exact)
        .map(|(f, e)| e.iter().filter(|j| f.contains(j)).count())
        .sum();
    hits as f64 / (exact.len() * K) as f64
}

fn rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1024.0
}

fn in_threads<F: Fn(usize) + Sync>(n: usize, f: F) {
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let f = &f;
            s.spawn(move || {
                let mut i = t;
                while i < n {
                    f(i);
                    i += THREADS;
                }
            });
        }
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let n_base: usize = args.get(2).map_or(100_000, |s| s.parse().unwrap());
    let n_query: usize = args.get(3).map_or(10_000, |s| s.parse().unwrap());
    let (all, dim) = read_npy_rows(path, n_base + n_query);
    let distinct = all.len() / dim;
    assert!(distinct > n_query, "only {distinct} distinct rows");
    let n_base = distinct - n_query;
    let (base, queries) = all.split_at(n_base * dim);
    let t = Instant::now();
    let exact = exact_top_k(base, queries, dim);
    println!(
        "exact top-{K} (naive scan, reference): {:.1} s for {n_query} queries over {n_base} x {dim}",
        t.elapsed().as_secs_f64()
    );
    rayon_threads();

    // usearch
    let rss0 = rss_mib();
    let options = IndexOptions {
        dimensions: dim,
        metric: MetricKind::IP,
        quantization: ScalarKind::F32,
        connectivity: M,
        expansion_add: EF_CONSTRUCTION,
        expansion_search: 64,
        multi: false,
    };
    let index = Index::new(&options).unwrap();
    index.reserve_capacity_and_threads(n_base, THREADS).unwrap();
    let t = Instant::now();
    in_threads(n_base, |i| {
        index.add(i as u64, &base[i * dim..(i + 1) * dim]).unwrap()
    });
    let build = t.elapsed().as_secs_f64();
    let rss_built = rss_mib();
    for ef in [64, 128] {
        index.change_expansion_search(ef);
        let found = std::sync::Mutex::new(vec![Vec::new(); n_query]);
        let t = Instant::now();
        in_threads(n_query, |i| {
            let m = index.search(&queries[i * dim..(i + 1) * dim], K).unwrap();
            found.lock().unwrap()[i] = m.keys.iter().map(|&k| k as usize).collect();
        });
        let q = t.elapsed().as_secs_f64();
        println!(
            "usearch 2.26.6: build {build:.1} s, {n_query} queries at ef {ef} {q:.2} s, recall@{K} {:.4}, RSS +{:.0} MiB",
            recall(&found.into_inner().unwrap(), &exact),
            rss_built - rss0
        );
    }
    drop(index);

    // hnsw_rs
    let rss0 = rss_mib();
    let hnsw: Hnsw<f32, InnerProductDistance> =
        Hnsw::new(M, n_base, 16, EF_CONSTRUCTION, InnerProductDistance);
    let items: Vec<(&[f32], usize)> = (0..n_base)
        .map(|i| (&base[i * dim..(i + 1) * dim], i))
        .collect();
    let t = Instant::now();
    hnsw.parallel_insert_slice(&items);
    let build = t.elapsed().as_secs_f64();
    let rss_built = rss_mib();
    for ef in [64, 128] {
        let found = std::sync::Mutex::new(vec![Vec::new(); n_query]);
        let t = Instant::now();
        in_threads(n_query, |i| {
            let m = hnsw.search(&queries[i * dim..(i + 1) * dim], K, ef);
            found.lock().unwrap()[i] = m.iter().map(|n| n.d_id).collect();
        });
        let q = t.elapsed().as_secs_f64();
        println!(
            "hnsw_rs 0.3.5: build {build:.1} s, {n_query} queries at ef {ef} {q:.2} s, recall@{K} {:.4}, RSS +{:.0} MiB",
            recall(&found.into_inner().unwrap(), &exact),
            rss_built - rss0
        );
    }
}

/// 1 - <a, b> on unit vectors. hnsw_rs's own DistDot asserts a non-negative inner
/// product and panics on real embeddings, where negative cosines occur; hnsw_rs also
/// asserts distances >= 0, which rounding breaks for identical vectors: clamped.
struct InnerProductDistance;

impl Distance<f32> for InnerProductDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()).max(0.0)
    }
}

/// hnsw_rs inserts on rayon's global pool: two threads, as usearch.
fn rayon_threads() {
    // SAFETY: set before any rayon use, single-threaded at this point.
    unsafe { std::env::set_var("RAYON_NUM_THREADS", THREADS.to_string()) };
}
