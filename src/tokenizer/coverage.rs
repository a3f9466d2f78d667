//! How well a tokenizer covers each language of a corpus: the share of [UNK] tokens, the
//! tokens per sentence and per 100 characters, and the share of sentences cut at the
//! model's length limit. A vocabulary built for one language spells another script
//! character by character (long sequences, cut early) or not at all ([UNK]: the words are
//! lost before the encoder sees them); no amount of training recovers an [UNK].

use std::collections::BTreeMap;

use serde::Serialize;
use tokenizers::Tokenizer;

use crate::error::{LaseError, Result};

/// The coverage of one language's sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LanguageCoverage {
    pub language: String,
    pub sentences: usize,
    pub tokens: usize,
    pub unknown_tokens: usize,
    pub characters: usize,
    /// Sentences longer than `max_tokens` (special tokens included): cut when embedded.
    pub over_length: usize,
}

impl LanguageCoverage {
    /// Share of the tokens that are the unknown token, in percent.
    pub fn unknown_percent(&self) -> f64 {
        100.0 * self.unknown_tokens as f64 / self.tokens.max(1) as f64
    }
    pub fn tokens_per_sentence(&self) -> f64 {
        self.tokens as f64 / self.sentences.max(1) as f64
    }
    /// Tokens per 100 characters (whitespace excluded): near 100 = spelled letter by letter.
    pub fn tokens_per_100_characters(&self) -> f64 {
        100.0 * self.tokens as f64 / self.characters.max(1) as f64
    }
    pub fn over_length_percent(&self) -> f64 {
        100.0 * self.over_length as f64 / self.sentences.max(1) as f64
    }
}

/// The id of the tokenizer model's unknown token (WordPiece's and BPE's `unk_token`,
/// Unigram's `unk_id`), if it has one (byte-level BPE has none: it never loses text).
pub fn unknown_id(tokenizer: &Tokenizer) -> Option<u32> {
    let model = serde_json::to_value(tokenizer.get_model()).ok()?;
    match model["unk_token"].as_str() {
        Some(token) => tokenizer.token_to_id(token),
        None => model["unk_id"].as_u64().map(|id| id as u32),
    }
}

/// Special tokens the tokenizer's post-processor adds to one sentence ([CLS] and [SEP]: 2).
pub fn special_tokens_per_sentence(tokenizer: &Tokenizer) -> usize {
    use tokenizers::PostProcessor;
    tokenizer
        .get_post_processor()
        .map_or(0, |p| p.added_tokens(false))
}

/// Coverage per language of `sentences` (text, language code), at most `per_language`
/// sentences of each language (the first ones met), sorted by [UNK] share (highest
/// first), then by tokens per 100 characters. `special_tokens`: how many special tokens
/// the model adds to each sentence ([CLS], [SEP]: 2), counted against `max_tokens`.
pub fn coverage<'a>(
    tokenizer: &Tokenizer,
    sentences: impl Iterator<Item = (&'a str, &'a str)>,
    per_language: usize,
    max_tokens: usize,
    special_tokens: usize,
) -> Result<Vec<LanguageCoverage>> {
    let mut tokenizer = tokenizer.clone();
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| LaseError::Tokenizer(e.to_string()))?;
    let unk = unknown_id(&tokenizer);
    let mut samples: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (text, language) in sentences {
        let sample = samples.entry(language).or_default();
        if sample.len() < per_language {
            sample.push(text);
        }
    }
    let mut out = Vec::with_capacity(samples.len());
    for (language, texts) in samples {
        let encodings = tokenizer
            .encode_batch(texts.clone(), false)
            .map_err(|e| LaseError::Tokenizer(e.to_string()))?;
        let mut c = LanguageCoverage {
            language: language.to_owned(),
            sentences: texts.len(),
            tokens: 0,
            unknown_tokens: 0,
            characters: texts
                .iter()
                .map(|t| t.chars().filter(|ch| !ch.is_whitespace()).count())
                .sum(),
            over_length: 0,
        };
        for e in &encodings {
            let ids = e.get_ids();
            c.tokens += ids.len();
            c.unknown_tokens += unk.map_or(0, |u| ids.iter().filter(|&&i| i == u).count());
            c.over_length += usize::from(ids.len() + special_tokens > max_tokens);
        }
        out.push(c);
    }
    out.sort_by(|a, b| {
        b.unknown_percent()
            .total_cmp(&a.unknown_percent())
            .then(
                b.tokens_per_100_characters()
                    .total_cmp(&a.tokens_per_100_characters()),
            )
            .then(a.language.cmp(&b.language))
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> Tokenizer {
        let pieces: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cat", "dog", "##s"]
            .iter()
            .map(|p| p.to_string())
            .collect();
        let json = crate::tokenizer::wordpiece_tokenizer_json(&pieces);
        Tokenizer::from_bytes(json.to_string()).unwrap()
    }

    #[test]
    fn counts_unknown_tokens_lengths_and_cuts_per_language() {
        let t = tokenizer();
        // A word of the vocabulary, and one in a script it has no piece for.
        let known = "cat".to_string();
        let unknown = "ഇത്";
        let english = format!("{known} {known}");
        let malayalam = format!("{unknown} {known}");
        let long = vec![known.as_str(); 40].join(" ");
        let rows = [
            (english.as_str(), "eng"),
            (malayalam.as_str(), "mal"),
            (long.as_str(), "eng"),
            (malayalam.as_str(), "mal"),
            (english.as_str(), "eng"), // beyond per_language = 2
        ];
        let report = coverage(&t, rows.into_iter(), 2, 16, 2).unwrap();
        assert_eq!(report[0].language, "mal", "highest [UNK] share first");
        let mal = &report[0];
        assert_eq!((mal.sentences, mal.tokens, mal.unknown_tokens), (2, 4, 2));
        assert!((mal.unknown_percent() - 50.0).abs() < 1e-9);
        let eng = &report[1];
        assert_eq!(eng.sentences, 2);
        assert_eq!(eng.tokens, 42);
        assert_eq!(eng.unknown_tokens, 0);
        assert_eq!(eng.over_length, 1, "40 tokens + 2 specials > 16");
        assert_eq!(eng.characters, 42 * known.len());
    }
}
