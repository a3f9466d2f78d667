//! Extending a pretrained WordPiece model's vocabulary for new languages, so a student
//! initialised from an English teacher (Reimers & Gurevych 2020's recipe with the
//! teacher's own weights, lecture-sentence-encoders.txt) does not see Cyrillic, Arabic
//! or Devanagari words as strings of single characters.
//!
//! 1. A WordPiece vocabulary is trained (the `tokenizers` crate's WordPieceTrainer) on a
//!    language-balanced sample of the new languages' text, with the teacher's own
//!    normaliser and pre-tokeniser, so pieces are cut as the teacher cuts text.
//! 2. The `pieces` most frequent trained pieces the teacher's vocabulary lacks are
//!    appended (ids V, V+1, ...): every existing id and row is unchanged. WordPiece
//!    matches greedily, longest piece first, so an English word tokenises as before
//!    unless a new piece is a longer match inside it (the test below checks a sentence;
//!    the MSE term on the English side pulls any changed ones back to the teacher).
//!    With [`PieceSelection::Unreadable`] only pieces holding a character that no old
//!    piece holds are kept: a word the old vocabulary could read is spelled by old pieces,
//!    so it has none of those characters, no new piece matches inside it, and it
//!    tokenises exactly as before. The model then computes the same vectors as before
//!    for all text it could read, and only what it read as [UNK] gets new rows (each
//!    such piece's old spelling is [UNK], so its row starts as [UNK]'s).
//!    With [`PieceSelection::NonLatin`] only pieces holding a letter of a script other
//!    than Latin are kept (learnt from the sentences holding one): Latin-script text
//!    tokenises exactly as before, and the scripts an English vocabulary holds only as
//!    single letters (Cyrillic, Arabic, Greek, Hebrew, Hangul's jamo) get word pieces.
//! 3. Each new row of the word-embedding matrix starts as the mean of the teacher's rows
//!    of the piece's tokenisation under the old vocabulary (a common initialisation for
//!    added tokens; a piece the old vocabulary cannot spell gets [UNK]'s row).
//!
//! The output is an ordinary model folder (config.json's vocab_size, tokenizer.json and
//! vocab.txt updated) that lase, sentence-transformers and transformers load.

use std::path::Path;

use tch::{Kind, Tensor};
use tokenizers::Tokenizer;
use tokenizers::models::TrainerWrapper;
use tokenizers::models::wordpiece::{WordPiece, WordPieceTrainer};

use crate::error::{LaseError, Result};
use crate::io::safetensors::{read_safetensors, write_safetensors};

/// What [`extend_vocabulary`] did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ExtensionReport {
    pub old_vocab_size: usize,
    pub new_vocab_size: usize,
    /// The first few added pieces, for the log.
    pub examples: Vec<String>,
    /// Mean tokens per sample sentence before and after (how much shorter the new
    /// languages' sequences become).
    pub tokens_per_sentence_before: f64,
    pub tokens_per_sentence_after: f64,
}

/// Which learnt pieces [`extend_vocabulary`] adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PieceSelection {
    /// The most frequent pieces the old vocabulary lacks.
    #[default]
    Any,
    /// Only pieces holding a character no old piece holds (see the module doc).
    Unreadable,
    /// Only pieces holding a letter of a script other than Latin, learnt from the sample's
    /// sentences that hold one. A word of Latin letters, digits and punctuation holds no
    /// such letter, so no new piece matches inside it and it tokenises exactly as before;
    /// scripts an English vocabulary can read only letter by letter (Cyrillic, Arabic,
    /// Greek, Hebrew, Hangul's jamo) get word pieces instead.
    NonLatin,
}

/// Whether `c` is a letter of the Latin script (Unicode's Latin blocks, fullwidth forms
/// included), or one of the modifier letters Latin orthographies write inside words (the
/// glottal stop ʼ, the tone and length marks ˈ ˋ ː of many Bible translations' spellings:
/// Spacing Modifier Letters, Modifier Tone Letters). Digits, punctuation and marks are not
/// letters of any script here.
pub fn is_latin_letter(c: char) -> bool {
    c.is_alphabetic()
        && matches!(c as u32,
            0x41..=0x5A | 0x61..=0x7A | 0xAA | 0xBA | 0xC0..=0x24F | 0x250..=0x2FF | 0xA700..=0xA71F
            | 0x1D00..=0x1DBF | 0x1E00..=0x1EFF | 0x2071 | 0x207F | 0x2090..=0x209C
            | 0x2C60..=0x2C7F | 0xA720..=0xA7FF | 0xAB30..=0xAB6F | 0xFB00..=0xFB06
            | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A)
        && !matches!(c, '\u{D7}' | '\u{F7}')
}

/// Whether `text` holds a letter of a script other than Latin.
fn has_non_latin_letter(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_alphabetic() && !is_latin_letter(c))
}

/// Copies the model folder `model` to `output` with `pieces` new WordPiece pieces
/// learnt from `sample`, chosen by `selection` (see the module doc). The folder must hold a WordPiece
/// tokenizer.json and a model.safetensors with `embeddings.word_embeddings.weight`.
pub fn extend_vocabulary(
    model: &Path,
    sample: &[&str],
    pieces: usize,
    selection: PieceSelection,
    output: &Path,
) -> Result<ExtensionReport> {
    if pieces > super::training::MAX_VOCABULARY {
        return Err(LaseError::InvalidArgument(format!(
            "{pieces} new pieces: at most {} may be added",
            super::training::MAX_VOCABULARY
        )));
    }
    crate::io::checksums::verify(model)?;
    let tokenizer_path = model.join("tokenizer.json");
    let (mut json, old, prefix) = read_wordpiece(&tokenizer_path)?;
    let old_vocab = old.get_vocab(true);
    let v = old_vocab.len();
    let added = learn_pieces(&old, &old_vocab, sample, pieces, selection, &prefix)?;

    // New ids after the old ones.
    let vocab = json["model"]["vocab"]
        .as_object_mut()
        .ok_or_else(|| LaseError::bad_file(&tokenizer_path, "model.vocab is not a map"))?;
    if vocab.len() != v {
        return Err(LaseError::bad_file(
            &tokenizer_path,
            "added tokens outside model.vocab are not supported",
        ));
    }
    for (i, p) in added.iter().enumerate() {
        vocab.insert(p.clone(), serde_json::Value::from(v + i));
    }
    let tensors = extended_weights(model, &old, &added, &prefix, v)?;

    // The folder: everything copied, then the changed files replaced.
    crate::io::copy_model_folder(model, output)?;
    let named: Vec<(String, Tensor)> = tensors.into_iter().collect();
    write_safetensors(&output.join("model.safetensors"), &named)?;
    let mut config = read_json(&model.join("config.json"))?;
    config["vocab_size"] = serde_json::Value::from(v + added.len());
    write_json(&output.join("config.json"), &config)?;
    write_json(&output.join("tokenizer.json"), &json)?;
    if model.join("vocab.txt").exists() {
        let mut ordered: Vec<(&String, u32)> = old_vocab.iter().map(|(p, &i)| (p, i)).collect();
        ordered.sort_by_key(|(_, i)| *i);
        let mut text: String = ordered.iter().map(|(p, _)| format!("{p}\n")).collect();
        for p in &added {
            text.push_str(p);
            text.push('\n');
        }
        crate::io::atomic::write_atomic(output.join("vocab.txt"), text.as_bytes())?;
    }
    // This folder's own checksums (the input's were not copied).
    crate::io::checksums::write(output)?;

    let (_, new, _) = read_wordpiece(&output.join("tokenizer.json"))?;
    Ok(ExtensionReport {
        old_vocab_size: v,
        new_vocab_size: v + added.len(),
        examples: added.iter().take(20).cloned().collect(),
        tokens_per_sentence_before: tokens_per_sentence(&old, sample),
        tokens_per_sentence_after: tokens_per_sentence(&new, sample),
    })
}

/// A WordPiece `tokenizer.json`: its JSON (to edit), the tokenizer without padding or
/// truncation (a padded spelling would average [PAD] rows into a new row), and the
/// continuing-subword prefix.
pub(crate) fn read_wordpiece(
    tokenizer_path: &Path,
) -> Result<(serde_json::Value, Tokenizer, String)> {
    let json_text = crate::io::text::read_text(tokenizer_path)?;
    let json: serde_json::Value = serde_json::from_str(&json_text)
        .map_err(|e| LaseError::bad_file(tokenizer_path, e.to_string()))?;
    if json["model"]["type"] != "WordPiece" {
        return Err(LaseError::bad_file(
            tokenizer_path,
            format!(
                "vocabulary extension needs a WordPiece model, found {}",
                json["model"]["type"]
            ),
        ));
    }
    let mut tokenizer = Tokenizer::from_file(tokenizer_path)
        .map_err(|e| LaseError::bad_file(tokenizer_path, e.to_string()))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| LaseError::Tokenizer(e.to_string()))?;
    let prefix = json["model"]["continuing_subword_prefix"]
        .as_str()
        .unwrap_or("##")
        .to_owned();
    Ok((json, tokenizer, prefix))
}

/// The `pieces` most frequent pieces that `old` (vocabulary `old_vocab`) lacks, from a
/// WordPiece trained on the sample with `old`'s normaliser and pre-tokeniser; with
/// [`PieceSelection::Unreadable`] only those holding a character no old piece holds, with
/// [`PieceSelection::NonLatin`] only those holding a non-Latin letter.
fn learn_pieces(
    old: &Tokenizer,
    old_vocab: &std::collections::HashMap<String, u32>,
    sample: &[&str],
    pieces: usize,
    selection: PieceSelection,
    prefix: &str,
) -> Result<Vec<String>> {
    let alphabet = Alphabet::of(old_vocab.keys(), prefix);
    // Sentences wholly in Latin letters cannot give a non-Latin piece: leave them out, so
    // the trainer's merges are spent on the other scripts.
    let sample: Vec<&str> = match selection {
        PieceSelection::NonLatin => sample
            .iter()
            .copied()
            .filter(|s| has_non_latin_letter(s))
            .collect(),
        _ => sample.to_vec(),
    };
    let trainer = WordPieceTrainer::builder()
        .vocab_size(old_vocab.len() + pieces * 2)
        .min_frequency(3)
        .continuing_subword_prefix(prefix.to_owned())
        .show_progress(false)
        .build();
    let mut trainer: TrainerWrapper = trainer.into();
    let mut fresh = Tokenizer::new(WordPiece::default());
    fresh
        .with_normalizer(old.get_normalizer().cloned())
        .map_err(|e| LaseError::Tokenizer(e.to_string()))?;
    fresh.with_pre_tokenizer(old.get_pre_tokenizer().cloned());
    fresh
        .train(&mut trainer, sample.iter().copied())
        .map_err(|e| LaseError::Tokenizer(format!("WordPiece training failed: {e}")))?;
    let mut trained: Vec<(String, u32)> = fresh.get_vocab(false).into_iter().collect();
    // Trainer ids: the alphabet first, then merges in the order they were learnt (most
    // frequent first).
    trained.sort_by_key(|(_, id)| *id);
    Ok(trained
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| !old_vocab.contains_key(p) && p != prefix)
        .filter(|p| match selection {
            PieceSelection::Any => true,
            PieceSelection::Unreadable => alphabet.lacks_a_character_of(p),
            PieceSelection::NonLatin => has_non_latin_letter(p.strip_prefix(prefix).unwrap_or(p)),
        })
        .take(pieces)
        .collect())
}

/// The characters of a vocabulary's pieces (continuation prefix stripped).
struct Alphabet<'a> {
    chars: std::collections::HashSet<char>,
    prefix: &'a str,
}

impl<'a> Alphabet<'a> {
    fn of<'p>(pieces: impl Iterator<Item = &'p String>, prefix: &'a str) -> Self {
        let chars = pieces
            .flat_map(|p| p.strip_prefix(prefix).unwrap_or(p).chars())
            .collect();
        Self { chars, prefix }
    }

    /// Whether `piece` holds a character no piece of the vocabulary holds: then no word
    /// the vocabulary can spell contains it.
    fn lacks_a_character_of(&self, piece: &str) -> bool {
        let text = piece.strip_prefix(self.prefix).unwrap_or(piece);
        text.chars().any(|c| !self.chars.contains(&c))
    }
}

/// The model's weights with one embedding row appended per added piece: the mean of the
/// rows of the piece's spelling under the old tokenizer.
fn extended_weights(
    model: &Path,
    old: &Tokenizer,
    added: &[String],
    prefix: &str,
    v: usize,
) -> Result<std::collections::BTreeMap<String, Tensor>> {
    let weights_path = model.join("model.safetensors");
    let mut tensors = read_safetensors(&weights_path)?;
    let key = tensors
        .keys()
        .find(|k| k.ends_with("word_embeddings.weight"))
        .cloned()
        .ok_or_else(|| LaseError::bad_file(&weights_path, "no word_embeddings.weight"))?;
    let table = tensors[&key].to_kind(Kind::Float);
    if table.size()[0] as usize != v {
        return Err(LaseError::bad_file(
            &weights_path,
            format!(
                "{key} has {} rows but the tokenizer {v} pieces",
                table.size()[0]
            ),
        ));
    }
    let unk = old.token_to_id("[UNK]").unwrap_or(0) as i64;
    let rows: Vec<Tensor> = added
        .iter()
        .map(|p| {
            let text = p.strip_prefix(prefix).unwrap_or(p);
            let ids: Vec<i64> = old
                .encode(text, false)
                .map(|e| e.get_ids().iter().map(|&i| i as i64).collect())
                .unwrap_or_default();
            let ids = if ids.is_empty() { vec![unk] } else { ids };
            table
                .index_select(0, &Tensor::from_slice(&ids))
                .mean_dim(0, false, Kind::Float)
        })
        .collect();
    let extended = if rows.is_empty() {
        table
    } else {
        Tensor::cat(&[table, Tensor::stack(&rows, 0)], 0)
    };
    tensors.insert(key, extended);
    Ok(tensors)
}

/// Mean tokens per sentence over the sample's first 2,000 sentences.
fn tokens_per_sentence(t: &Tokenizer, sample: &[&str]) -> f64 {
    let probe = &sample[..sample.len().min(2000)];
    let total: usize = probe
        .iter()
        .map(|s| t.encode(*s, false).map(|e| e.len()).unwrap_or(0))
        .sum();
    total as f64 / probe.len().max(1) as f64
}

/// Reads a JSON file; a parse error names the file.
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = crate::io::text::read_text(path)?;
    serde_json::from_str(&text).map_err(|e| LaseError::bad_file(path, e.to_string()))
}

/// Writes pretty JSON atomically (no final newline).
pub(crate) fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("JSON serialises");
    crate::io::atomic::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WordPiece model folder whose vocabulary spells Latin words letter by letter and
    /// knows no Cyrillic at all beyond single letters.
    fn tiny_model(dir: &Path) -> Tokenizer {
        let mut pieces: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for c in ('a'..='z').chain('а'..='я') {
            pieces.push(c.to_string());
            pieces.push(format!("##{c}"));
        }
        let mut json = crate::tokenizer::wordpiece_tokenizer_json(&pieces);
        // Padded to a fixed length, as all-MiniLM-L6-v2's file is.
        json["padding"] = serde_json::json!({"strategy": {"Fixed": 16}, "direction": "Right",
            "pad_to_multiple_of": null, "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"});
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("tokenizer.json"), json.to_string()).unwrap();
        let t = Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
        let table = Tensor::randn([pieces.len() as i64, 8], (Kind::Float, tch::Device::Cpu));
        write_safetensors(
            &dir.join("model.safetensors"),
            &[("embeddings.word_embeddings.weight".into(), table)],
        )
        .unwrap();
        std::fs::write(
            dir.join("config.json"),
            format!("{{\"vocab_size\": {}, \"hidden_size\": 8}}", pieces.len()),
        )
        .unwrap();
        t
    }

    #[test]
    fn new_pieces_shorten_new_scripts_and_keep_every_old_id_and_row() {
        let dir = tempfile::tempdir().unwrap();
        let old = tiny_model(&dir.path().join("old"));
        let words = ["привет", "мир", "кошка", "собака", "дом", "город", "вода"];
        let sample: Vec<String> = (0..400)
            .map(|i| {
                format!(
                    "{} {} {}",
                    words[i % 7],
                    words[(i * 3 + 1) % 7],
                    words[(i * 5 + 2) % 7]
                )
            })
            .collect();
        let sample: Vec<&str> = sample.iter().map(String::as_str).collect();
        // The old folder as lase ships one: a model card and a checksum manifest, both
        // about the old model.
        std::fs::write(dir.path().join("old/README.md"), "# the old model").unwrap();
        crate::io::checksums::write(&dir.path().join("old")).unwrap();
        let out = dir.path().join("new");
        let r = extend_vocabulary(
            &dir.path().join("old"),
            &sample,
            50,
            PieceSelection::Any,
            &out,
        )
        .unwrap();
        // The new folder's manifest describes its own (changed) files; the card is gone.
        assert!(
            crate::io::checksums::verify(&out)
                .unwrap()
                .is_some_and(|n| n >= 2)
        );
        assert!(!out.join("README.md").exists());
        assert_eq!(r.old_vocab_size, old.get_vocab_size(true));
        assert!(r.new_vocab_size > r.old_vocab_size, "{r:?}");
        assert!(
            r.tokens_per_sentence_after < r.tokens_per_sentence_before / 2.0,
            "{r:?}"
        );
        let new = Tokenizer::from_file(out.join("tokenizer.json")).unwrap();
        // English tokenises exactly as before.
        let mut old = old;
        old.with_padding(None);
        let ids = |t: &Tokenizer, s: &str| t.encode(s, false).unwrap().get_ids().to_vec();
        let mut new = new;
        new.with_padding(None);
        assert_eq!(ids(&new, "the cat sat"), ids(&old, "the cat sat"));
        // Old rows unchanged; a new row is the mean of its old spelling's rows.
        let before = read_safetensors(&dir.path().join("old/model.safetensors")).unwrap();
        let after = read_safetensors(&out.join("model.safetensors")).unwrap();
        let (b, a) = (
            &before["embeddings.word_embeddings.weight"],
            &after["embeddings.word_embeddings.weight"],
        );
        assert_eq!(a.size(), [r.new_vocab_size as i64, 8]);
        assert!(a.narrow(0, 0, r.old_vocab_size as i64).equal(b));
        let piece = "собака";
        let id = new
            .token_to_id(piece)
            .expect("a frequent word becomes one piece") as i64;
        let spelled: Vec<i64> = ids(&old, piece).iter().map(|&i| i as i64).collect();
        let expected =
            b.index_select(0, &Tensor::from_slice(&spelled))
                .mean_dim(0, false, Kind::Float);
        assert!(a.get(id).allclose(&expected, 1e-6, 1e-6, false));
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap())
                .unwrap();
        assert_eq!(config["vocab_size"], r.new_vocab_size);
    }

    /// `unreadable` adds only pieces holding a character the old vocabulary lacks (Greek
    /// here): Cyrillic, which it spelled letter by letter, tokenises exactly as before,
    /// while Greek words stop being [UNK]. `any` on the same sample adds Cyrillic pieces
    /// too, so the selection is what keeps them out.
    #[test]
    fn unreadable_pieces_leave_readable_text_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = tiny_model(&dir.path().join("old"));
        old.with_padding(None);
        let words = [
            "привет",
            "мир",
            "кошка",
            "λόγος",
            "θάλασσα",
            "ήλιος",
            "собака",
        ];
        let sample: Vec<String> = (0..400)
            .map(|i| format!("{} {}", words[i % 7], words[(i * 3 + 1) % 7]))
            .collect();
        let sample: Vec<&str> = sample.iter().map(String::as_str).collect();
        let ids = |t: &Tokenizer, s: &str| t.encode(s, false).unwrap().get_ids().to_vec();
        let unk = old.token_to_id("[UNK]").unwrap();
        let greek = "λόγος θάλασσα";
        assert!(ids(&old, greek).contains(&unk));
        let added_by = |selection| {
            let out = dir.path().join(format!("{selection:?}"));
            let r =
                extend_vocabulary(&dir.path().join("old"), &sample, 40, selection, &out).unwrap();
            let mut new = Tokenizer::from_file(out.join("tokenizer.json")).unwrap();
            new.with_padding(None);
            let added: Vec<String> = (r.old_vocab_size..r.new_vocab_size)
                .map(|id| new.id_to_token(id as u32).unwrap())
                .collect();
            (new, added)
        };
        let (new, added) = added_by(PieceSelection::Unreadable);
        assert!(!added.is_empty());
        for piece in &added {
            let text = piece.strip_prefix("##").unwrap_or(piece);
            assert!(ids(&old, text).contains(&unk), "{piece} was readable");
            assert!(
                text.chars()
                    .any(|c| !('a'..='z').chain('а'..='я').any(|k| k == c))
            );
        }
        for sentence in ["привет мир", "кошка собака", "the cat"] {
            assert_eq!(ids(&new, sentence), ids(&old, sentence), "{sentence}");
        }
        assert!(!ids(&new, greek).contains(&unk), "{:?}", ids(&new, greek));
        let (_, any) = added_by(PieceSelection::Any);
        assert!(
            any.iter().any(|p| p.contains('о') || p.contains('и')),
            "{any:?}"
        );
    }

    /// `non-latin` adds only pieces holding a non-Latin letter, learnt from the sentences
    /// that hold one: Latin words the sample repeats as often as the Cyrillic ones
    /// tokenise exactly as before, while the Cyrillic words, which the old vocabulary spelled
    /// letter by letter, become pieces. `any` on the same sample adds Latin pieces too, so
    /// the selection is what keeps them out.
    #[test]
    fn non_latin_pieces_leave_latin_text_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = tiny_model(&dir.path().join("old"));
        old.with_padding(None);
        let words = [
            "привет",
            "house",
            "кошка",
            "garden",
            "собака",
            "window",
            "город",
        ];
        let sample: Vec<String> = (0..400)
            .map(|i| format!("{} {}", words[i % 7], words[(i * 3 + 1) % 7]))
            .chain(
                (0..200).map(|i| format!("{} {}", words[(i * 2 + 1) % 7], words[(i * 4 + 3) % 7])),
            )
            .collect();
        let sample: Vec<&str> = sample.iter().map(String::as_str).collect();
        let ids = |t: &Tokenizer, s: &str| t.encode(s, false).unwrap().get_ids().to_vec();
        let added_by = |selection| {
            let out = dir.path().join(format!("{selection:?}"));
            let r =
                extend_vocabulary(&dir.path().join("old"), &sample, 40, selection, &out).unwrap();
            let mut new = Tokenizer::from_file(out.join("tokenizer.json")).unwrap();
            new.with_padding(None);
            let added: Vec<String> = (r.old_vocab_size..r.new_vocab_size)
                .map(|id| new.id_to_token(id as u32).unwrap())
                .collect();
            (new, added)
        };
        let (new, added) = added_by(PieceSelection::NonLatin);
        assert!(!added.is_empty());
        for piece in &added {
            let text = piece.strip_prefix("##").unwrap_or(piece);
            assert!(text.chars().any(|c| ('а'..='я').contains(&c)), "{piece}");
        }
        for sentence in ["house garden window", "the cat", "windows 2024"] {
            assert_eq!(ids(&new, sentence), ids(&old, sentence), "{sentence}");
        }
        let cyrillic = "привет собака город";
        assert!(
            ids(&new, cyrillic).len() < ids(&old, cyrillic).len() / 2,
            "{:?} vs {:?}",
            ids(&new, cyrillic),
            ids(&old, cyrillic)
        );
        let (_, any) = added_by(PieceSelection::Any);
        assert!(
            any.iter()
                .any(|p| p.chars().any(|c| c.is_ascii_lowercase())),
            "{any:?}"
        );
    }

    #[test]
    fn latin_letters_are_told_from_other_scripts() {
        for c in ['a', 'Z', 'é', 'ß', 'ł', 'ə', 'ṇ', 'ｆ', 'ʼ', 'ˈ', 'ⁿ'] {
            assert!(is_latin_letter(c), "{c}");
        }
        for c in [
            'д', 'ж', 'ب', 'λ', 'א', 'ᄀ', '中', '7', '-', '×', '\u{301}',
        ] {
            assert!(!is_latin_letter(c), "{c}");
        }
        assert!(has_non_latin_letter("##ов"));
        assert!(has_non_latin_letter("x中"));
        assert!(!has_non_latin_letter("café-2024"));
    }

    /// Counter-examples to "spelled with [UNK] means unreadable": with `##a` and `##b` but
    /// no `a`, the piece `##ab` spells as [UNK] alone yet matches inside `xab`; with `x` and
    /// `##yz` but no `##y`, `xy` spells as [UNK] yet matches inside `xyz`. Neither holds a
    /// new character, so neither is unreadable; a piece with one is.
    #[test]
    fn only_pieces_with_a_new_character_are_unreadable() {
        let vocab: Vec<String> = ["[UNK]", "x", "##a", "##b", "##yz"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let alphabet = Alphabet::of(vocab.iter(), "##");
        assert!(!alphabet.lacks_a_character_of("##ab"));
        assert!(!alphabet.lacks_a_character_of("xy"));
        assert!(alphabet.lacks_a_character_of("##aλ"));
        assert!(alphabet.lacks_a_character_of("λ"));
    }

    #[test]
    fn a_non_wordpiece_tokenizer_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tokenizer.json"),
            crate::tokenizer::training::train_unigram(
                &["a b c", "d e f"],
                &[],
                &Default::default(),
            )
            .unwrap_or_else(|_| "{\"model\": {\"type\": \"Unigram\"}}".into()),
        )
        .unwrap();
        let err = extend_vocabulary(
            dir.path(),
            &["x"],
            5,
            PieceSelection::Any,
            &dir.path().join("o"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("tokenizer.json") && err.contains("WordPiece"),
            "{err}"
        );
    }
}
