//! Tokenization for sentence encoders, with sentence-transformers' semantics rather
//! than whatever `tokenizer.json` was saved with: inputs are whitespace-stripped,
//! truncated (special tokens included) to the model's `max_seq_length`, and never
//! padded here (batches are padded to their own longest sentence). A tokenizer.json
//! saved with fixed padding to 128 (all-MiniLM-L6-v2's) would otherwise pad every
//! sentence to 128 tokens and truncate at the wrong length.

pub mod coverage;
pub mod extend;
pub mod prune;
pub mod training;

use std::path::Path;

use rayon::prelude::*;
use tch::{Device, Tensor};
use tokenizers::{Encoding, PostProcessor, Tokenizer, TruncationParams};

use crate::error::{LaseError, Result};

/// Special tokens `tokenizer`'s post-processor adds to a single sentence.
fn added_per_sentence(tokenizer: &Tokenizer) -> usize {
    tokenizer
        .get_post_processor()
        .map_or(0, |p| p.added_tokens(false))
}

/// Token ids of one sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenIds {
    pub ids: Vec<i64>,
    pub type_ids: Vec<i64>,
}

impl TokenIds {
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// Token ids of many sentences in one flat buffer (4 bytes a token id, 1 a type id,
/// 8 an offset), for the millions of training sentences a run holds at once: a
/// `Vec<TokenIds>` costs 16 bytes a token plus two allocations a sentence.
#[derive(Clone, Debug, Default)]
pub struct TokenStore {
    ids: Vec<u32>,
    type_ids: Vec<u8>,
    /// Sentence i is `ids[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<u64>,
}

impl TokenStore {
    pub fn new() -> Self {
        Self {
            ids: Vec::new(),
            type_ids: Vec::new(),
            offsets: vec![0],
        }
    }

    /// Appends one sentence; ids outside u32 or type ids outside u8 are refused.
    pub fn push(&mut self, tokens: &TokenIds) -> Result<()> {
        let ids = tokens
            .ids
            .iter()
            .map(|&id| {
                u32::try_from(id)
                    .map_err(|_| LaseError::Tokenizer(format!("token id {id} outside 0..2^32")))
            })
            .collect::<Result<Vec<u32>>>()?;
        let type_ids = tokens
            .type_ids
            .iter()
            .map(|&ty| type_id_byte(ty))
            .collect::<Result<Vec<u8>>>()?;
        self.push_compact(&ids, &type_ids)
    }

    /// Appends one sentence already in the store's widths.
    pub fn push_compact(&mut self, ids: &[u32], type_ids: &[u8]) -> Result<()> {
        if ids.len() != type_ids.len() {
            return Err(LaseError::Tokenizer(format!(
                "{} token ids but {} type ids",
                ids.len(),
                type_ids.len()
            )));
        }
        self.ids.extend_from_slice(ids);
        self.type_ids.extend_from_slice(type_ids);
        self.offsets.push(self.ids.len() as u64);
        Ok(())
    }

    /// Number of sentences.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sentence `i`'s tokens (panics past the end, as slice indexing).
    pub fn get(&self, i: usize) -> TokenIds {
        let (start, end) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        TokenIds {
            ids: self.ids[start..end]
                .iter()
                .map(|&id| i64::from(id))
                .collect(),
            type_ids: self.type_ids[start..end]
                .iter()
                .map(|&ty| i64::from(ty))
                .collect(),
        }
    }
}

/// A token type id in the store's one byte; wider ones are refused.
fn type_id_byte<T: TryInto<u8> + Copy + std::fmt::Display>(ty: T) -> Result<u8> {
    ty.try_into()
        .map_err(|_| LaseError::Tokenizer(format!("token type id {ty} outside 0..256")))
}

/// A padded batch on a device: `input_ids`, `token_type_ids`, `attention_mask`, [B, S].
#[derive(Debug)]
pub struct TokenBatch {
    pub input_ids: Tensor,
    pub token_type_ids: Tensor,
    pub attention_mask: Tensor,
}

impl TokenBatch {
    /// Right-pads `items` to the longest with `pad_id`.
    pub fn from_ids(items: &[&TokenIds], pad_id: i64, device: Device) -> Self {
        let b = items.len();
        let s = items.iter().map(|t| t.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![pad_id; b * s];
        let mut types = vec![0i64; b * s];
        let mut mask = vec![0i64; b * s];
        for (row, item) in items.iter().enumerate() {
            let at = row * s;
            ids[at..at + item.len()].copy_from_slice(&item.ids);
            types[at..at + item.len()].copy_from_slice(&item.type_ids);
            mask[at..at + item.len()].fill(1);
        }
        let shape = [b as i64, s as i64];
        let make = |v: &[i64]| Tensor::from_slice(v).view(shape).to_device(device);
        Self {
            input_ids: make(&ids),
            token_type_ids: make(&types),
            attention_mask: make(&mask),
        }
    }

    pub fn batch_size(&self) -> i64 {
        self.input_ids.size()[0]
    }
}

/// A `tokenizers` tokenizer configured the way sentence-transformers uses it.
#[derive(Clone)]
pub struct SentenceTokenizer {
    inner: Tokenizer,
    max_length: usize,
    pad_id: i64,
    lowercase: bool,
}

impl std::fmt::Debug for SentenceTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceTokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("max_length", &self.max_length)
            .field("pad_id", &self.pad_id)
            .finish()
    }
}

impl SentenceTokenizer {
    /// Loads `tokenizer.json`; `pad_id` comes from the model config.
    pub fn from_file(path: &Path, max_length: usize, pad_id: i64, lowercase: bool) -> Result<Self> {
        let inner = Tokenizer::from_file(path)
            .map_err(|e| LaseError::bad_file(path, format!("cannot read tokenizer: {e}")))?;
        Self::new(inner, max_length, pad_id, lowercase)
    }

    pub fn new(
        mut inner: Tokenizer,
        max_length: usize,
        pad_id: i64,
        lowercase: bool,
    ) -> Result<Self> {
        // The tokenizers crate subtracts the special tokens from the maximum unsigned:
        // a maximum that leaves no room for text would wrap (no truncation at all).
        let special = added_per_sentence(&inner);
        if max_length <= special {
            return Err(LaseError::InvalidArgument(format!(
                "max length {max_length} leaves no room for text: the tokenizer adds {special} special tokens to each sentence, so it must be at least {}",
                special + 1
            )));
        }
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                max_length,
                ..Default::default()
            }))
            .map_err(|e| LaseError::Tokenizer(e.to_string()))?;
        Ok(Self {
            inner,
            max_length,
            pad_id,
            lowercase,
        })
    }

    pub fn inner(&self) -> &Tokenizer {
        &self.inner
    }

    /// Special tokens the tokenizer adds to each sentence ([CLS] and [SEP]: 2).
    pub fn special_tokens_per_sentence(&self) -> usize {
        added_per_sentence(&self.inner)
    }

    pub fn max_length(&self) -> usize {
        self.max_length
    }

    pub fn pad_id(&self) -> i64 {
        self.pad_id
    }

    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The largest id the tokenizer can emit (added tokens included), if it has any.
    pub fn max_token_id(&self) -> Option<u32> {
        self.inner.get_vocab(true).into_values().max()
    }

    /// Sets a new truncation length (special tokens included).
    pub fn set_max_length(&mut self, max_length: usize) -> Result<()> {
        *self = Self::new(self.inner.clone(), max_length, self.pad_id, self.lowercase)?;
        Ok(())
    }

    /// A `tokenizer_config.json` for Hugging Face loaders (`PreTrainedTokenizerFast` over
    /// tokenizer.json), naming the special tokens found among the added tokens.
    pub fn hf_tokenizer_config(&self) -> serde_json::Value {
        let mut config = serde_json::json!({
            "tokenizer_class": "PreTrainedTokenizerFast",
            "model_max_length": self.max_length,
            "clean_up_tokenization_spaces": false,
        });
        let roles: &[(&str, &[&str])] = &[
            ("pad_token", &["[PAD]", "<pad>"]),
            ("unk_token", &["[UNK]", "<unk>"]),
            ("cls_token", &["[CLS]", "<s>"]),
            ("sep_token", &["[SEP]", "</s>"]),
            ("mask_token", &["[MASK]", "<mask>"]),
            ("bos_token", &["<s>"]),
            ("eos_token", &["</s>"]),
        ];
        let specials: Vec<String> = self
            .inner
            .get_added_tokens_decoder()
            .values()
            .filter(|t| t.special)
            .map(|t| t.content.clone())
            .collect();
        for (role, names) in roles {
            if let Some(found) = names.iter().find(|n| specials.iter().any(|s| s == *n)) {
                config[*role] = serde_json::json!(found);
            }
        }
        if config.get("pad_token").is_none()
            && let Some(pad) = self.inner.id_to_token(self.pad_id as u32)
        {
            config["pad_token"] = serde_json::json!(pad);
        }
        config
    }

    /// Tokenizes sentences (with special tokens), in parallel.
    pub fn encode<S: AsRef<str>>(&self, sentences: &[S]) -> Result<Vec<TokenIds>> {
        Ok(self
            .encode_reporting_truncation(sentences)?
            .into_iter()
            .map(|(t, _)| t)
            .collect())
    }

    /// As [`Self::encode`] into a [`TokenStore`], `chunk` sentences at a time, so the
    /// tokenizer's per-sentence bookkeeping (offsets, token strings, overflow) never
    /// exists for more than one chunk.
    pub fn encode_to_store<'a>(
        &self,
        sentences: impl Iterator<Item = &'a str>,
        chunk: usize,
    ) -> Result<TokenStore> {
        let mut store = TokenStore::new();
        let mut pending: Vec<&str> = Vec::with_capacity(chunk.max(1));
        let flush = |pending: &mut Vec<&str>, store: &mut TokenStore| -> Result<()> {
            // Each Encoding reduced to the store's widths on the worker threads (its
            // token strings, offsets and masks freed there too), so that only the copy
            // into the store is serial.
            let compact: Vec<Result<(Vec<u32>, Vec<u8>)>> = self
                .encode_raw(pending)?
                .into_par_iter()
                .map(|e| {
                    let type_ids = e
                        .get_type_ids()
                        .iter()
                        .map(|&ty| type_id_byte(ty))
                        .collect::<Result<Vec<u8>>>()?;
                    Ok((e.get_ids().to_vec(), type_ids))
                })
                .collect();
            for sentence in compact {
                let (ids, type_ids) = sentence?;
                store.push_compact(&ids, &type_ids)?;
            }
            pending.clear();
            Ok(())
        };
        for s in sentences {
            pending.push(s);
            if pending.len() >= chunk.max(1) {
                flush(&mut pending, &mut store)?;
            }
        }
        flush(&mut pending, &mut store)?;
        Ok(store)
    }

    /// As [`Self::encode`], and for each sentence whether it was longer than the
    /// model's maximum length (and so truncated).
    pub fn encode_reporting_truncation<S: AsRef<str>>(
        &self,
        sentences: &[S],
    ) -> Result<Vec<(TokenIds, bool)>> {
        Ok(self
            .encode_raw(sentences)?
            .into_par_iter()
            .map(|e| ids_and_truncation(&e))
            .collect())
    }

    /// As [`Self::encode_reporting_truncation`], on the calling thread only (no rayon):
    /// for a few short texts, where handing them to rayon's pool costs more than
    /// tokenising them (the server's small requests).
    pub fn encode_serial_reporting_truncation<S: AsRef<str>>(
        &self,
        sentences: &[S],
    ) -> Result<Vec<(TokenIds, bool)>> {
        sentences
            .iter()
            .map(|s| {
                self.inner
                    .encode_fast(self.prepare(s.as_ref()), true)
                    .map(|e| ids_and_truncation(&e))
                    .map_err(|e| LaseError::Tokenizer(e.to_string()))
            })
            .collect()
    }

    /// A sentence as sentence-transformers hands it to the tokenizer: stripped, and
    /// lowercased where the model is uncased.
    fn prepare(&self, sentence: &str) -> String {
        let s = sentence.trim();
        if self.lowercase {
            s.to_lowercase()
        } else {
            s.to_owned()
        }
    }

    /// The tokenizer's encodings of sentences prepared as sentence-transformers does
    /// (stripped, lowercased where the model is uncased), the preparation and the
    /// tokenizer's batch both spread over rayon's threads (RAYON_NUM_THREADS bounds both;
    /// TOKENIZERS_PARALLELISM=false makes only the tokenizer's own part serial).
    fn encode_raw<S: AsRef<str>>(&self, sentences: &[S]) -> Result<Vec<Encoding>> {
        let refs: Vec<&str> = sentences.iter().map(AsRef::as_ref).collect();
        let prepared: Vec<String> = refs.par_iter().map(|s| self.prepare(s)).collect();
        self.inner
            .encode_batch_fast(prepared, true)
            .map_err(|e| LaseError::Tokenizer(e.to_string()))
    }
}

/// An encoding's ids and type ids, and whether the tokenizer cut the sentence (it left
/// overflowing pieces).
fn ids_and_truncation(e: &Encoding) -> (TokenIds, bool) {
    (
        TokenIds {
            ids: e.get_ids().iter().map(|&i| i as i64).collect(),
            type_ids: e.get_type_ids().iter().map(|&i| i as i64).collect(),
        },
        !e.get_overflowing().is_empty(),
    )
}

/// Test fixture: an uncased-BERT WordPiece tokenizer.json over `pieces` (id = position),
/// with no padding, added tokens or post-processor; a test sets those it needs.
#[cfg(test)]
pub(crate) fn wordpiece_tokenizer_json(pieces: &[String]) -> serde_json::Value {
    let vocab: serde_json::Map<String, serde_json::Value> = pieces
        .iter()
        .enumerate()
        .map(|(i, p)| (p.clone(), serde_json::Value::from(i)))
        .collect();
    serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": {"type": "BertNormalizer", "clean_text": true,
            "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]",
            "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
            "vocab": vocab}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_store_gives_back_what_was_pushed_and_refuses_what_it_cannot_hold() {
        let sentences = [
            TokenIds {
                ids: vec![2, 70_000, 3],
                type_ids: vec![0, 1, 0],
            },
            TokenIds {
                ids: vec![],
                type_ids: vec![],
            },
            TokenIds {
                ids: vec![2, u32::MAX as i64, 5, 3],
                type_ids: vec![0, 0, 255, 0],
            },
        ];
        let mut store = TokenStore::new();
        assert!(store.is_empty());
        for s in &sentences {
            store.push(s).unwrap();
        }
        assert_eq!(store.len(), 3);
        for (i, s) in sentences.iter().enumerate() {
            assert_eq!(&store.get(i), s, "sentence {i}");
        }
        let too_big = TokenIds {
            ids: vec![1 << 32],
            type_ids: vec![0],
        };
        assert!(store.push(&too_big).is_err());
        let bad_type = TokenIds {
            ids: vec![1],
            type_ids: vec![256],
        };
        assert!(store.push(&bad_type).is_err());
        let mismatched = TokenIds {
            ids: vec![1, 2],
            type_ids: vec![0],
        };
        assert!(store.push(&mismatched).is_err());
        assert_eq!(store.len(), 3);
    }

    /// The trainer's chunked, parallel path stores what `encode` gives, in order, across
    /// chunk boundaries (chunks of 3 over 10 sentences: two full, one partial).
    #[test]
    fn the_store_path_matches_encode_in_order_across_chunks() {
        let pieces: Vec<String> = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "cat", "dog", "##s", "sat",
        ]
        .iter()
        .map(|p| p.to_string())
        .collect();
        let mut json = wordpiece_tokenizer_json(&pieces);
        json["post_processor"] = serde_json::json!({
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [], "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}
        });
        let inner = Tokenizer::from_bytes(json.to_string()).unwrap();
        let tokenizer = SentenceTokenizer::new(inner, 6, 0, true).unwrap();
        let sentences = [
            "cat",
            " Dogs sat ",
            "",
            "cats cats cats cats cats",
            "dog",
            "sat cat",
            "ഇത്",
            "CAT DOG",
            "dogs",
            "sat sat sat",
        ];
        let expected = tokenizer.encode(&sentences).unwrap();
        let store = tokenizer
            .encode_to_store(sentences.iter().copied(), 3)
            .unwrap();
        assert_eq!(store.len(), sentences.len());
        for (i, e) in expected.iter().enumerate() {
            assert_eq!(&store.get(i), e, "sentence {i} ({:?})", sentences[i]);
        }
        // Not all alike: the check compares distinct sentences (lowercased, truncated to 6).
        assert_eq!(expected[1].ids, vec![2, 5, 6, 7, 3]);
        assert_eq!(expected[3].len(), 6);
        assert_ne!(expected[0], expected[4]);

        // The server's serial path (small requests, no rayon) gives the batch path's ids
        // and the same truncation flags: sentence 3 is cut, sentence 1 is not.
        let batch = tokenizer.encode_reporting_truncation(&sentences).unwrap();
        let serial = tokenizer
            .encode_serial_reporting_truncation(&sentences)
            .unwrap();
        assert_eq!(serial, batch);
        assert!(serial[3].1 && !serial[1].1);
    }
}
