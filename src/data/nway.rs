//! N-way aligned folders: one file per language (`<lang>.txt[.gz]`, e.g. `deu_Latn.txt.gz`),
//! line i of every file the same segment, an empty line where a language lacks it (the
//! layout of `../shared/data/parallel-bible`, `parallel-seed`, `parallel-pud`, and of a
//! multi-way OPUS or FLORES-style download).
//!
//! Each row gives one pair per language with the pivot (English) on the target side, and
//! optionally `non_pivot_pairs` pairs between two other languages present in the row,
//! drawn with a seed derived from the row, so a re-read gives the same pairs. A non-pivot
//! pair keeps its row's pivot segment: the target a pivot-language teacher gives both of
//! its sides (a row without a pivot segment gives none). Every pair records its row:
//! segments of one row translate each other, so the sampler keeps them out of one batch
//! and the dev split takes whole rows.
//!
//! Files are read line by line (streaming, plain or gzip); a file with a different line
//! count than the pivot's is an error naming the file and the first line that differs.

use std::path::{Path, PathBuf};

use super::corpus::ParallelCorpus;
use super::files::{file_name, names, sorted_entries};
use crate::error::{LaseError, Result};
use crate::io::text::LineReader;
use crate::lang::LanguageCode;
use crate::rng::{SplitMix64, mix_seed};

/// The language files of an N-way folder: (normalised code, path), sorted by code.
pub fn language_files(dir: &Path) -> Result<Vec<(LanguageCode, PathBuf)>> {
    let mut out = Vec::new();
    for path in sorted_entries(dir)? {
        let name = file_name(&path);
        let Some(code) = name
            .strip_suffix(".txt.gz")
            .or_else(|| name.strip_suffix(".txt"))
        else {
            continue;
        };
        // ids.txt holds row identifiers (as in this project's N-way folders), not text.
        if code == "ids" {
            continue;
        }
        if let Ok((code, _)) = LanguageCode::parse(code) {
            out.push((code, path));
        }
    }
    Ok(out)
}

/// Reads an N-way folder into `corpus` (see the module doc).
pub fn add_n_way(
    corpus: &mut ParallelCorpus,
    dir: &Path,
    pivot: &str,
    keep: &[String],
    non_pivot_pairs: usize,
) -> Result<()> {
    let (pivot_code, _) = LanguageCode::parse(pivot)?;
    let files = language_files(dir)?;
    let pivot_matches: Vec<&(LanguageCode, PathBuf)> =
        files.iter().filter(|(c, _)| pivot_code.names(c)).collect();
    let (pivot_lang, pivot_path) = match pivot_matches.as_slice() {
        [one] => (one.0.clone(), one.1.clone()),
        [] => {
            return Err(LaseError::bad_file(
                dir,
                format!(
                    "no file of the pivot language {pivot:?} (<lang>.txt[.gz]) in this N-way folder"
                ),
            ));
        }
        _ => {
            return Err(LaseError::bad_file(
                dir,
                format!("several files match the pivot {pivot:?}: name its script (e.g. eng_Latn)"),
            ));
        }
    };
    let pivot_lines = read_all(&pivot_path)?;
    let others: Vec<&(LanguageCode, PathBuf)> = files
        .iter()
        .filter(|(c, _)| *c != pivot_lang)
        .filter(|(c, _)| keep.is_empty() || keep.iter().any(|k| names(k, c)))
        .collect();
    if others.is_empty() {
        return Err(LaseError::bad_file(
            dir,
            "no language file besides the pivot (or none the recipe's languages name)",
        ));
    }
    let t = corpus.language_id(&pivot_lang.to_string());
    // With non-pivot pairs every language's rows stay in memory until all are read.
    let mut kept: Vec<(u16, Vec<String>)> = Vec::new();
    for (code, path) in others {
        let s = corpus.language_id(&code.to_string());
        let lines = read_aligned(path, &pivot_path, pivot_lines.len())?;
        for (row, (x, y)) in lines.iter().zip(&pivot_lines).enumerate() {
            corpus.push(x.clone(), y.clone(), s, t, Some(row as u32));
        }
        if non_pivot_pairs > 0 {
            kept.push((s, lines));
        }
    }
    if non_pivot_pairs > 0 && kept.len() >= 2 {
        let seed = mix_seed(&[0x6e77_6179, pivot_lines.len() as u64, kept.len() as u64]);
        for (row, pivot_line) in pivot_lines.iter().enumerate() {
            // A row without its pivot segment has no teacher target: no pairs from it.
            if pivot_line.trim().is_empty() {
                continue;
            }
            let present: Vec<usize> = (0..kept.len())
                .filter(|&k| !kept[k].1[row].trim().is_empty())
                .collect();
            if present.len() < 2 {
                continue;
            }
            let mut rng = SplitMix64::new(mix_seed(&[seed, row as u64]));
            for _ in 0..non_pivot_pairs {
                let a = present[rng.below(present.len())];
                let mut b = present[rng.below(present.len() - 1)];
                if b == a {
                    b = present[present.len() - 1];
                }
                let (sa, la) = (&kept[a].1[row], kept[a].0);
                let (sb, lb) = (&kept[b].1[row], kept[b].0);
                corpus.push_non_pivot(
                    (sa.clone(), la),
                    (sb.clone(), lb),
                    pivot_line.clone(),
                    row as u32,
                );
            }
        }
    }
    Ok(())
}

fn read_all(path: &Path) -> Result<Vec<String>> {
    LineReader::open(path)?.collect()
}

/// A language file's lines, which must be exactly `rows` (the pivot file's count).
fn read_aligned(path: &Path, pivot: &Path, rows: usize) -> Result<Vec<String>> {
    let lines = read_all(path)?;
    if lines.len() != rows {
        let (shorter, longer, line) = if lines.len() < rows {
            (path, pivot, lines.len() + 1)
        } else {
            (pivot, path, rows + 1)
        };
        return Err(LaseError::bad_line(
            shorter,
            line,
            format!(
                "file ends here but {} has a line {line}: N-way files must have one line per row",
                longer.display()
            ),
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::CorpusSource;
    use std::io::Write;

    fn gz(path: &Path, text: &str) {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        std::fs::write(path, e.finish().unwrap()).unwrap();
    }

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        gz(
            &dir.path().join("eng_Latn.txt.gz"),
            "In the beginning\nAnd the earth\nLight\n",
        );
        gz(
            &dir.path().join("deu_Latn.txt.gz"),
            "Am Anfang\nUnd die Erde\n\n",
        );
        gz(
            &dir.path().join("fra_Latn.txt.gz"),
            "Au commencement\n\nLumière\n",
        );
        std::fs::write(
            dir.path().join("rus_Cyrl.txt"),
            "В начале\nЗемля же\nСвет\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("ids.txt"), "GEN.1.1\nGEN.1.2\nGEN.1.3\n").unwrap();
        dir
    }

    fn read(dir: &Path, languages: &[&str], non_pivot_pairs: usize) -> Result<ParallelCorpus> {
        ParallelCorpus::read(&[CorpusSource::NWay {
            path: dir.into(),
            pivot: "en".into(),
            languages: languages.iter().map(|s| s.to_string()).collect(),
            non_pivot_pairs,
            weight: None,
        }])
    }

    #[test]
    fn pivot_pairs_keep_their_rows_and_skip_missing_segments() {
        let dir = folder();
        let c = read(dir.path(), &[], 0).unwrap();
        // deu 2 + fra 2 + rus 3 pairs; two empty cells skipped.
        assert_eq!(c.pairs.len(), 7);
        assert_eq!(c.skipped_empty, 2);
        assert_eq!(
            c.languages,
            vec!["eng_Latn", "deu_Latn", "fra_Latn", "rus_Cyrl"]
        );
        let fra: Vec<(&str, &str, Option<u32>)> = c
            .pairs
            .iter()
            .filter(|p| c.languages[p.src_lang as usize] == "fra_Latn")
            .map(|p| (p.src.as_str(), p.tgt.as_str(), p.row))
            .collect();
        assert_eq!(
            fra,
            vec![
                ("Au commencement", "In the beginning", Some(0)),
                ("Lumière", "Light", Some(2))
            ]
        );
        assert!(
            c.pairs
                .iter()
                .all(|p| c.languages[p.tgt_lang as usize] == "eng_Latn")
        );
        // A 2-letter filter names the scripted file.
        let only = read(dir.path(), &["ru"], 0).unwrap();
        assert_eq!(only.pairs.len(), 3);
    }

    #[test]
    fn non_pivot_pairs_come_from_one_row_and_repeat_on_rereading() {
        let dir = folder();
        let c = read(dir.path(), &[], 2).unwrap();
        let extra: Vec<_> = c
            .pairs
            .iter()
            .filter(|p| c.languages[p.tgt_lang as usize] != "eng_Latn")
            .collect();
        // Rows 0 and 2 have 3 and rows 1 has 2 non-pivot languages: 2 pairs each.
        assert_eq!(extra.len(), 6);
        for p in &extra {
            assert_ne!(p.src_lang, p.tgt_lang);
            let row = p.row.unwrap() as usize;
            let same_row: Vec<&str> = c
                .pairs
                .iter()
                .filter(|q| {
                    q.row == Some(row as u32) && c.languages[q.tgt_lang as usize] == "eng_Latn"
                })
                .map(|q| q.src.as_str())
                .collect();
            assert!(same_row.contains(&p.src.as_str()) && same_row.contains(&p.tgt.as_str()));
            // It carries its row's English segment, which the pivot pairs have as target.
            let english = c
                .pairs
                .iter()
                .find(|q| q.row == Some(row as u32) && !q.is_non_pivot())
                .unwrap();
            assert!(p.is_non_pivot());
            assert_eq!(p.pivot_text(), english.tgt);
        }
        assert!(c.pairs.iter().filter(|p| !p.is_non_pivot()).all(|p| {
            p.pivot_text() == p.tgt && c.languages[p.tgt_lang as usize] == "eng_Latn"
        }));
        let again = read(dir.path(), &[], 2).unwrap();
        assert_eq!(again.pairs, c.pairs);
    }

    #[test]
    fn a_short_file_and_a_missing_pivot_are_named() {
        let dir = folder();
        gz(&dir.path().join("spa_Latn.txt.gz"), "En el principio\n");
        let err = read(dir.path(), &[], 0).unwrap_err().to_string();
        assert!(
            err.contains("spa_Latn.txt.gz:2:") && err.contains("one line per row"),
            "{err}"
        );
        let err = ParallelCorpus::read(&[CorpusSource::NWay {
            path: dir.path().into(),
            pivot: "jpn".into(),
            languages: vec![],
            non_pivot_pairs: 0,
            weight: None,
        }])
        .unwrap_err()
        .to_string();
        assert!(err.contains("pivot") && err.contains("jpn"), "{err}");
    }
}
