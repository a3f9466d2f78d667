//! `lase shard mine`: the merged k-NN lists of both directions, margin-scored and
//! retrieved as `lase mine` does ([`crate::mine::mine_from_neighbours`]), with each pair's
//! sentences read back from the corpora.

use std::path::Path;

use super::knn::{Direction, merged};
use super::store::Store;
use crate::error::{LaseError, Result};
use crate::mine::MineOptions;
use crate::mine::bitext::MinedBitext;

/// Mines `src` against `tgt` from the k-NN lists in `knn` (`options.knn.k` must be the
/// k they were searched with). Pairs come in `lase mine`'s order, best first.
pub fn mine_shards(
    src: &Store,
    tgt: &Store,
    knn: &Path,
    options: &MineOptions,
) -> Result<Vec<MinedBitext>> {
    if options.ann.is_some() || options.quantization != crate::mine::quantized::Quantization::None {
        return Err(LaseError::InvalidArgument(
            "sharded mining searches exactly; approximate options do not apply".into(),
        ));
    }
    let k = options.knn.k;
    let forward = merged(knn, Direction::Fwd, src, tgt, k)?;
    let backward = merged(knn, Direction::Bwd, tgt, src, k)?;
    let pairs = crate::mine::mine_from_neighbours(&forward, &backward, options);
    let text_of = |store: &Store, lines: Vec<usize>| -> Result<Vec<(usize, String)>> {
        let mut wanted = lines;
        wanted.sort_unstable();
        wanted.dedup();
        let texts = store.lines_at(&wanted)?;
        Ok(wanted.into_iter().zip(texts).collect())
    };
    let src_text = text_of(src, pairs.iter().map(|p| p.src).collect())?;
    let tgt_text = text_of(tgt, pairs.iter().map(|p| p.tgt).collect())?;
    let find = |table: &[(usize, String)], line: usize| -> String {
        let at = table
            .binary_search_by_key(&line, |(l, _)| *l)
            .expect("every mined line was read");
        table[at].1.clone()
    };
    Ok(pairs
        .iter()
        .map(|p| MinedBitext {
            score: p.score,
            src_line: p.src,
            tgt_line: p.tgt,
            src: find(&src_text, p.src),
            tgt: find(&tgt_text, p.tgt),
        })
        .collect())
}
