//! Pruning a WordPiece vocabulary to the pieces a corpus uses, for a smaller student
//! (the inverse of [`super::extend`]): most of a model's parameters can sit in its
//! word-embedding table (all-MiniLM-L6-v2: 11.7M of 22.7M), and a thin student of it needs
//! only the rows its languages spell text with.
//!
//! Kept, in the old id order (so the new ids are the ranks of the kept old ids):
//! 1. every added (special) token: [PAD], [UNK], [CLS], [SEP], [MASK], ...;
//! 2. every single-character piece, with and without the continuing-subword prefix: a word
//!    whose longer pieces were dropped can still be spelled, as before, character by
//!    character, so no text that tokenised without [UNK] gains one;
//! 3. the most frequent remaining pieces of the sample's tokenisation, up to `size` in all
//!    (a piece the sample never uses is dropped even when there is room).
//!
//! WordPiece matches the longest piece first; a piece that the sample never produced
//! never won that match, so dropping it leaves the tokenisation of every sample sentence
//! unchanged while all of its pieces are kept (the test below checks it).

use std::collections::HashSet;
use std::path::Path;

use tokenizers::Tokenizer;

use super::extend::read_wordpiece;
use crate::error::{LaseError, Result};

/// A pruned vocabulary: the new tokenizer.json, the old id of each new id, and the
/// vocab.txt text.
#[derive(Debug)]
pub struct PrunedVocabulary {
    pub tokenizer_json: serde_json::Value,
    /// `kept_old_ids[new_id]` is the piece's id in the old vocabulary.
    pub kept_old_ids: Vec<i64>,
    pub vocab_txt: String,
    pub report: PruneReport,
}

/// What [`prune_wordpiece`] did, for the log and the model card.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PruneReport {
    pub old_vocab_size: usize,
    pub new_vocab_size: usize,
    /// Pieces kept whatever their count (special tokens, single characters).
    pub always_kept: usize,
    pub sample_sentences: usize,
    /// Distinct pieces the sample's tokenisation used.
    pub pieces_used_by_sample: usize,
    /// Share of the sample's tokens whose piece was kept (1.0: the sample tokenises as
    /// before).
    pub sample_token_coverage: f64,
}

/// Prunes the WordPiece tokenizer at `tokenizer_path` to at most `size` pieces chosen by their
/// frequency in `sample` (see the module doc).
pub fn prune_wordpiece(
    tokenizer_path: &Path,
    sample: &[&str],
    size: usize,
) -> Result<PrunedVocabulary> {
    let (mut json, tokenizer, prefix) = read_wordpiece(tokenizer_path)?;
    let vocab = tokenizer.get_vocab(true);
    let v = vocab.len();
    let model_vocab_len = json["model"]["vocab"].as_object().map_or(0, |m| m.len());
    if model_vocab_len != v {
        return Err(LaseError::bad_file(
            tokenizer_path,
            "added tokens outside model.vocab are not supported",
        ));
    }
    // Ids index the tables below: they must be 0..v-1, each once (a hand-edited file can
    // skip one). The map is one id per piece, so v distinct ids all below v are exactly those.
    if let Some((piece, &id)) = vocab.iter().find(|&(_, &id)| id as usize >= v) {
        return Err(LaseError::bad_file(
            tokenizer_path,
            format!(
                "piece {piece:?} has id {id}, but there are {v} pieces: ids must run from 0 to {}",
                v - 1
            ),
        ));
    }
    if vocab.values().collect::<HashSet<_>>().len() != v {
        return Err(LaseError::bad_file(
            tokenizer_path,
            "two pieces share an id: ids must be distinct",
        ));
    }
    let counts = piece_counts(&tokenizer, sample, v)?;
    let mut keep: HashSet<u32> = HashSet::new();
    for t in json["added_tokens"].as_array().into_iter().flatten() {
        if let Some(id) = t["id"].as_u64() {
            if id as usize >= v {
                return Err(LaseError::bad_file(
                    tokenizer_path,
                    format!(
                        "added token {} has id {id}, but there are {v} pieces",
                        t["content"]
                    ),
                ));
            }
            keep.insert(id as u32);
        }
    }
    for (piece, &id) in &vocab {
        if piece
            .strip_prefix(prefix.as_str())
            .unwrap_or(piece)
            .chars()
            .count()
            == 1
        {
            keep.insert(id);
        }
    }
    let always_kept = keep.len();
    if always_kept > size {
        return Err(LaseError::InvalidArgument(format!(
            "a vocabulary of {size} pieces cannot hold the {always_kept} special and \
             single-character pieces of {}",
            tokenizer_path.display()
        )));
    }
    let mut by_count: Vec<u32> = (0..v as u32)
        .filter(|id| counts[*id as usize] > 0 && !keep.contains(id))
        .collect();
    by_count.sort_by_key(|&id| (std::cmp::Reverse(counts[id as usize]), id));
    keep.extend(by_count.into_iter().take(size - always_kept));

    let mut kept: Vec<u32> = keep.into_iter().collect();
    kept.sort_unstable();
    let mut new_id = vec![u32::MAX; v];
    for (new, &old) in kept.iter().enumerate() {
        new_id[old as usize] = new as u32;
    }
    let mut piece_of = vec![String::new(); v];
    for (piece, &id) in &vocab {
        piece_of[id as usize] = piece.clone();
    }
    let map = |old: u64| -> Result<u64> {
        match new_id.get(old as usize) {
            Some(&n) if n != u32::MAX => Ok(n as u64),
            _ => Err(LaseError::bad_file(
                tokenizer_path,
                format!("id {old} is referenced but not a kept piece"),
            )),
        }
    };
    let new_vocab: serde_json::Map<String, serde_json::Value> = kept
        .iter()
        .enumerate()
        .map(|(new, &old)| (piece_of[old as usize].clone(), new.into()))
        .collect();
    json["model"]["vocab"] = new_vocab.into();
    remap_special_ids(&mut json, &map, tokenizer_path)?;

    let used = counts.iter().filter(|&&c| c > 0).count();
    let total: u64 = counts.iter().sum();
    let covered: u64 = kept.iter().map(|&id| counts[id as usize]).sum();
    let vocab_txt = kept
        .iter()
        .map(|&id| format!("{}\n", piece_of[id as usize]))
        .collect();
    Ok(PrunedVocabulary {
        tokenizer_json: json,
        kept_old_ids: kept.iter().map(|&id| id as i64).collect(),
        vocab_txt,
        report: PruneReport {
            old_vocab_size: v,
            new_vocab_size: kept.len(),
            always_kept,
            sample_sentences: sample.len(),
            pieces_used_by_sample: used,
            sample_token_coverage: if total == 0 {
                1.0
            } else {
                covered as f64 / total as f64
            },
        },
    })
}

/// How often each id occurs in the tokenisation of `sample` (special tokens excluded).
fn piece_counts(tokenizer: &Tokenizer, sample: &[&str], v: usize) -> Result<Vec<u64>> {
    let mut counts = vec![0u64; v];
    for chunk in sample.chunks(4096) {
        let encodings = tokenizer
            .encode_batch(chunk.to_vec(), false)
            .map_err(|e| LaseError::Tokenizer(e.to_string()))?;
        for e in encodings {
            for &id in e.get_ids() {
                if let Some(c) = counts.get_mut(id as usize) {
                    *c += 1;
                }
            }
        }
    }
    Ok(counts)
}

/// Rewrites every id the tokenizer.json names outside model.vocab: added tokens, the
/// padding id and the post-processor's special tokens (TemplateProcessing and
/// BertProcessing/RobertaProcessing).
fn remap_special_ids(
    json: &mut serde_json::Value,
    map: &dyn Fn(u64) -> Result<u64>,
    path: &Path,
) -> Result<()> {
    for t in json["added_tokens"].as_array_mut().into_iter().flatten() {
        if let Some(id) = t["id"].as_u64() {
            t["id"] = map(id)?.into();
        }
    }
    if let Some(id) = json["padding"]["pad_id"].as_u64() {
        json["padding"]["pad_id"] = map(id)?.into();
    }
    let post = &mut json["post_processor"];
    match post["type"].as_str() {
        None => {}
        Some("TemplateProcessing") => {
            for special in post["special_tokens"].as_object_mut().into_iter().flatten() {
                for id in special.1["ids"].as_array_mut().into_iter().flatten() {
                    let old = id.as_u64().unwrap_or(u64::MAX);
                    *id = map(old)?.into();
                }
            }
        }
        Some("BertProcessing" | "RobertaProcessing") => {
            for key in ["sep", "cls"] {
                let old = post[key][1].as_u64().unwrap_or(u64::MAX);
                post[key][1] = map(old)?.into();
            }
        }
        Some(other) => {
            return Err(LaseError::bad_file(
                path,
                format!("vocabulary pruning does not know the post-processor {other}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BERT-like tokenizer.json: specials at 0-3, a few words, then letters.
    fn tiny_tokenizer(dir: &Path) -> std::path::PathBuf {
        let mut pieces: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for w in ["the", "cat", "dog", "house", "##ing", "walk", "zebra"] {
            pieces.push(w.into());
        }
        for c in 'a'..='z' {
            pieces.push(c.to_string());
            pieces.push(format!("##{c}"));
        }
        let special = |id: usize, content: &str| {
            serde_json::json!({"id": id, "special": true, "content": content, "single_word": false,
                "lstrip": false, "rstrip": false, "normalized": false})
        };
        let mut json = crate::tokenizer::wordpiece_tokenizer_json(&pieces);
        json["padding"] = serde_json::json!({"strategy": "BatchLongest", "direction": "Right",
            "pad_to_multiple_of": null, "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"});
        json["added_tokens"] = serde_json::json!([
            special(0, "[PAD]"),
            special(1, "[UNK]"),
            special(2, "[CLS]"),
            special(3, "[SEP]")
        ]);
        json["post_processor"] = serde_json::json!({"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}});
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join("tokenizer.json");
        std::fs::write(&path, json.to_string()).unwrap();
        path
    }

    fn pieces(t: &Tokenizer, s: &str) -> Vec<String> {
        t.encode(s, true).unwrap().get_tokens().to_vec()
    }

    #[test]
    fn the_sample_tokenises_as_before_and_dropped_words_are_spelled_by_letters() {
        let dir = tempfile::tempdir().unwrap();
        let path = tiny_tokenizer(dir.path());
        let old = Tokenizer::from_file(&path).unwrap();
        let sample = ["the cat walks", "the dogs", "the cat"];
        // 4 specials + 52 letters + room for 2 of the sample's 4 multi-letter pieces.
        let pruned = prune_wordpiece(&path, &sample, 58).unwrap();
        let r = &pruned.report;
        assert_eq!(
            (r.old_vocab_size, r.new_vocab_size, r.always_kept),
            (63, 58, 56)
        );
        // Used: the (3), cat (2), walk (1), dog (1): kept the and cat; walk and dog dropped.
        let new_path = dir.path().join("new.json");
        std::fs::write(&new_path, pruned.tokenizer_json.to_string()).unwrap();
        let new = Tokenizer::from_file(&new_path).unwrap();
        assert_eq!(pieces(&new, "the cat"), pieces(&old, "the cat"));
        assert_eq!(
            pieces(&new, "the dogs"),
            ["[CLS]", "the", "d", "##o", "##g", "##s", "[SEP]"]
        );
        // Special ids follow their pieces; a kept piece's new id maps back to its old one.
        let ids = new.encode("the cat", true).unwrap().get_ids().to_vec();
        let old_ids = old.encode("the cat", true).unwrap().get_ids().to_vec();
        let back: Vec<u32> = ids
            .iter()
            .map(|&i| pruned.kept_old_ids[i as usize] as u32)
            .collect();
        assert_eq!(back, old_ids);
        assert!(r.sample_token_coverage < 1.0, "{r:?}");
        assert_eq!(pruned.vocab_txt.lines().count(), 58);
        assert_eq!(pruned.vocab_txt.lines().nth(4), Some("the"));
    }

    #[test]
    fn ids_with_a_gap_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = tiny_tokenizer(dir.path());
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        // "zebra" (id 10 of 63) moved past the end: ids 0..62 with 10 missing, one id 500.
        json["model"]["vocab"]["zebra"] = serde_json::json!(500);
        std::fs::write(&path, json.to_string()).unwrap();
        let err = prune_wordpiece(&path, &["the cat"], 58)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tokenizer.json")
                && err.contains("\"zebra\" has id 500")
                && err.contains("63 pieces"),
            "{err}"
        );
    }

    #[test]
    fn a_size_below_the_pieces_always_kept_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = tiny_tokenizer(dir.path());
        let err = prune_wordpiece(&path, &["the cat"], 20)
            .unwrap_err()
            .to_string();
        assert!(err.contains("56") && err.contains("20 pieces"), "{err}");
    }
}
