//! Sharded embedding and mining: `lase mine` spread over many processes or machines, in
//! the four steps LASER's successor stopes runs as cluster jobs. Each step is an ordinary
//! command with files in and out; each is idempotent (a finished shard is checked and
//! skipped) and writes atomically, so a killed or failed job is simply run again.
//!
//! ```text
//! init   corpus.txt -> STORE/manifest.json        line ranges, aligned to the embed chunk
//! embed  STORE, shard i -> STORE/shard-i.npy       one job per shard (+ shard-i.json)
//! knn    SRC, TGT, shard i -> KNN/fwd-i.*          top-k of src shard i over all of TGT
//!        TGT, SRC, shard j -> KNN/bwd-j.*          and the other direction
//! mine   KNN + both stores -> pairs.tsv            margin over the merged lists
//! ```
//!
//! The result equals single-process `lase mine` (without `--unify`) to the byte:
//! shard ranges start at multiples of the embedding chunk, so every sentence is embedded
//! in the same length-sorted batch as in one process; the search kernel's scores do not
//! depend on tiling ([`crate::mine::topk_cpu::RunningTopK`]); and the lists are merged in
//! corpus order, which is the order one search inserts them in. `tests/shard.rs` checks
//! it for 1, 2 and 7 shards of uneven sizes.

pub mod embed;
pub mod knn;
pub mod mine;
pub mod store;

pub use embed::embed_shard;
pub use knn::{Direction, knn_shard};
pub use mine::mine_shards;
pub use store::{ShardRange, Store, StoreManifest};

/// What a step did with one shard.
#[derive(Clone, Debug, PartialEq)]
pub enum StepOutcome {
    /// The shard's output was already complete: nothing was done.
    Skipped { rows: usize },
    /// The shard's output was written.
    Written { rows: usize, seconds: f64 },
}
