//! Training a multilingual SentencePiece-style Unigram tokenizer (Kudo 2018) with the
//! `tokenizers` crate: NFKC normalisation, Metaspace pre-tokenisation (`▁` marks word
//! starts, as SentencePiece), special tokens `<pad> <unk> <s> </s>` and one `<2xx>`
//! token per language (ems.txt §III). The training text is a language-balanced sample:
//! language l contributes a share `q_l ∝ n_l^α` of the sampled sentences (XLM-R §3.1,
//! α = 0.3), so low-resource languages get pieces of their own. The result is a
//! tokenizer.json that Hugging Face tools read.

use std::collections::BTreeMap;

use tokenizers::decoders::metaspace::Metaspace as MetaspaceDecoder;
use tokenizers::models::TrainerWrapper;
use tokenizers::models::unigram::{Unigram, UnigramTrainer};
use tokenizers::normalizers::unicode::NFKC;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, Tokenizer};

use crate::data::sampler::temperature_weights;
use crate::error::{LaseError, Result};
use crate::rng::SplitMix64;

/// Special tokens, in id order: `<pad>` is 0.
pub const SPECIAL_TOKENS: [&str; 4] = ["<pad>", "<unk>", "<s>", "</s>"];

/// The `<2xx>` token of a language.
pub fn language_token(code: &str) -> String {
    format!("<2{code}>")
}

/// The most pieces a vocabulary lase trains may have, and the most one extension may add:
/// 4,194,304, sixteen times XLM-R's 250k; above it a number is refused as a likely typo
/// rather than left to the trainer, which sizes its tables by it before reading any text
/// (10^12 aborted in the allocator).
pub const MAX_VOCABULARY: usize = 1 << 22;

/// Settings of [`train_unigram`] (the sample it trains on is drawn beforehand, by
/// [`balanced_sample`]).
#[derive(Clone, Debug)]
pub struct TokenizerTrainingOptions {
    pub vocab_size: usize,
    pub show_progress: bool,
}

impl Default for TokenizerTrainingOptions {
    fn default() -> Self {
        Self {
            vocab_size: 60_000,
            show_progress: false,
        }
    }
}

/// Sentences drawn per language: `sample × q_l`, without replacement until a language
/// runs out, then with repetition (up-sampling), as XLM-R's sampler.
pub fn balanced_sample<'a>(
    by_language: &BTreeMap<String, Vec<&'a str>>,
    sample: usize,
    alpha: f64,
    seed: u64,
) -> Vec<&'a str> {
    let sizes: Vec<usize> = by_language.values().map(Vec::len).collect();
    if sizes.iter().all(|&n| n == 0) {
        return Vec::new();
    }
    let weights = temperature_weights(&sizes, alpha);
    let z: f64 = weights.iter().sum();
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(sample);
    for (sentences, w) in by_language.values().zip(&weights) {
        if sentences.is_empty() {
            continue;
        }
        let want = ((w / z) * sample as f64).round().max(1.0) as usize;
        let mut order: Vec<usize> = (0..sentences.len()).collect();
        rng.shuffle(&mut order);
        out.extend((0..want).map(|k| sentences[order[k % order.len()]]));
    }
    rng.shuffle(&mut out);
    out
}

/// Trains the tokenizer on `sentences` (already sampled) for `languages`; returns the
/// tokenizer.json text.
pub fn train_unigram(
    sentences: &[&str],
    languages: &[String],
    options: &TokenizerTrainingOptions,
) -> Result<String> {
    let mut specials: Vec<AddedToken> = SPECIAL_TOKENS
        .iter()
        .map(|t| AddedToken::from(*t, true))
        .collect();
    specials.extend(
        languages
            .iter()
            .map(|l| AddedToken::from(language_token(l), true)),
    );
    let required = specials.len() + 2;
    if options.vocab_size > MAX_VOCABULARY {
        return Err(LaseError::InvalidArgument(format!(
            "vocab_size {}: at most {MAX_VOCABULARY} pieces",
            options.vocab_size
        )));
    }
    if options.vocab_size <= required {
        return Err(LaseError::InvalidArgument(format!(
            "vocab_size {} leaves no room beside {} special and language tokens",
            options.vocab_size,
            specials.len()
        )));
    }
    let trainer = UnigramTrainer::builder()
        .vocab_size(options.vocab_size as u32)
        .special_tokens(specials.clone())
        .unk_token(Some("<unk>".into()))
        .show_progress(options.show_progress)
        .build()
        .map_err(|e| LaseError::Tokenizer(format!("unigram trainer: {e}")))?;
    let mut trainer: TrainerWrapper = trainer.into();
    let mut tokenizer = Tokenizer::new(Unigram::default());
    tokenizer
        .with_normalizer(Some(NFKC))
        .map_err(|e| LaseError::Tokenizer(e.to_string()))?;
    tokenizer.with_pre_tokenizer(Some(Metaspace::new('▁', PrependScheme::Always, true)));
    tokenizer.with_decoder(Some(MetaspaceDecoder::new(
        '▁',
        PrependScheme::Always,
        true,
    )));
    tokenizer
        .train(&mut trainer, sentences.iter().copied())
        .map_err(|e| LaseError::Tokenizer(format!("training failed: {e}")))?;
    tokenizer
        .add_special_tokens(specials.clone())
        .map_err(|e| LaseError::Tokenizer(e.to_string()))?;
    let id = |t: &str| {
        tokenizer
            .token_to_id(t)
            .ok_or_else(|| LaseError::Tokenizer(format!("trained vocabulary lacks {t}")))
    };
    let (bos, eos) = (id("<s>")?, id("</s>")?);
    if id("<pad>")? != 0 {
        return Err(LaseError::Tokenizer("<pad> must have id 0".into()));
    }
    tokenizer.with_post_processor(Some(
        TemplateProcessing::builder()
            .try_single("<s> $A </s>")
            .and_then(|b| b.try_pair("<s> $A </s> </s> $B </s>"))
            .map_err(|e| LaseError::Tokenizer(e.to_string()))?
            .special_tokens(vec![("<s>", bos), ("</s>", eos)])
            .build()
            .map_err(|e| LaseError::Tokenizer(e.to_string()))?,
    ));
    tokenizer
        .to_string(false)
        .map_err(|e| LaseError::Tokenizer(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_sample_upsamples_small_languages() {
        let big: Vec<String> = (0..10_000).map(|i| format!("big {i}")).collect();
        let small: Vec<String> = (0..10).map(|i| format!("small {i}")).collect();
        let mut m = BTreeMap::new();
        m.insert(
            "aaa".to_string(),
            big.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        m.insert(
            "bbb".to_string(),
            small.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let s = balanced_sample(&m, 1000, 0.3, 1);
        let n_small = s.iter().filter(|t| t.starts_with("small")).count();
        // q_small = 0.000999^0.3 / (0.999^0.3 + 0.000999^0.3) = 0.1259 / 1.1256 = 0.1118
        assert!((108..=116).contains(&n_small), "{n_small}");
        // Proportional sampling would give about 1.
        let p = balanced_sample(&m, 1000, 1.0, 1);
        assert!(p.iter().filter(|t| t.starts_with("small")).count() <= 2);
    }

    #[test]
    fn trains_a_tokenizer_with_language_tokens_that_hf_layout_reads() {
        let text = [
            "the cat sat on the mat",
            "der hund läuft schnell",
            "le chat est sur le tapis",
            "die katze ist klein",
            "the dog runs fast",
            "un petit chien",
            "das haus ist rot",
        ];
        let sentences: Vec<&str> = text.iter().cycle().take(500).copied().collect();
        let langs = vec!["eng".to_string(), "deu".to_string(), "fra".to_string()];
        let json = train_unigram(
            &sentences,
            &langs,
            &TokenizerTrainingOptions {
                vocab_size: 80,
                ..Default::default()
            },
        )
        .unwrap();
        let tok = Tokenizer::from_bytes(json.as_bytes()).unwrap();
        assert_eq!(tok.token_to_id("<pad>"), Some(0));
        assert!(tok.token_to_id("<2deu>").is_some());
        let enc = tok.encode("der hund <2fra> ｃａｔ", true).unwrap();
        let tokens = enc.get_tokens();
        assert_eq!(tokens.first().map(String::as_str), Some("<s>"));
        assert_eq!(tokens.last().map(String::as_str), Some("</s>"));
        assert!(tokens.iter().any(|t| t == "<2fra>"), "{tokens:?}");
        // NFKC folds full-width letters.
        assert!(!tokens.iter().any(|t| t.contains('ｃ')), "{tokens:?}");
        assert!(tok.get_vocab_size(true) <= 80 + 3);
    }
}
