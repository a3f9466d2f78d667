//! One language-code scheme for data, recipes and `lase eval`: ISO 639-3 with an optional
//! ISO 15924 script (`deu`, `deu_Latn`, `zho_Hans`, as FLORES-200 writes them).
//!
//! Two-letter ISO 639-1 codes (`de`, `zh`) are accepted as aliases and mapped to their
//! ISO 639-3 code; [`LanguageCode::parse`] reports when it mapped one, so the caller can
//! say so. Benchmarks that name their files with other codes (STS-B's `de`, Tatoeba's
//! `cmn`, FLORES's `deu_Latn`) are matched through [`resolve`], which compares codes by
//! ISO 639-3 language (macro-language aware: `cmn` matches `zho`) and by script when both
//! sides give one.

use crate::error::{LaseError, Result};

/// ISO 639-1 -> ISO 639-3 (the individual or macro-language code FLORES-200, Tatoeba and
/// the training data use).
const ISO_639_1: &[(&str, &str)] = &[
    ("aa", "aar"),
    ("ab", "abk"),
    ("af", "afr"),
    ("ak", "aka"),
    ("am", "amh"),
    ("an", "arg"),
    ("ar", "ara"),
    ("as", "asm"),
    ("av", "ava"),
    ("ay", "aym"),
    ("az", "aze"),
    ("ba", "bak"),
    ("be", "bel"),
    ("bg", "bul"),
    ("bi", "bis"),
    ("bm", "bam"),
    ("bn", "ben"),
    ("bo", "bod"),
    ("br", "bre"),
    ("bs", "bos"),
    ("ca", "cat"),
    ("ce", "che"),
    ("ch", "cha"),
    ("co", "cos"),
    ("cs", "ces"),
    ("cv", "chv"),
    ("cy", "cym"),
    ("da", "dan"),
    ("de", "deu"),
    ("dv", "div"),
    ("dz", "dzo"),
    ("ee", "ewe"),
    ("el", "ell"),
    ("en", "eng"),
    ("eo", "epo"),
    ("es", "spa"),
    ("et", "est"),
    ("eu", "eus"),
    ("fa", "fas"),
    ("ff", "ful"),
    ("fi", "fin"),
    ("fj", "fij"),
    ("fo", "fao"),
    ("fr", "fra"),
    ("fy", "fry"),
    ("ga", "gle"),
    ("gd", "gla"),
    ("gl", "glg"),
    ("gn", "grn"),
    ("gu", "guj"),
    ("gv", "glv"),
    ("ha", "hau"),
    ("he", "heb"),
    ("hi", "hin"),
    ("ho", "hmo"),
    ("hr", "hrv"),
    ("ht", "hat"),
    ("hu", "hun"),
    ("hy", "hye"),
    ("ia", "ina"),
    ("id", "ind"),
    ("ie", "ile"),
    ("ig", "ibo"),
    ("ii", "iii"),
    ("ik", "ipk"),
    ("io", "ido"),
    ("is", "isl"),
    ("it", "ita"),
    ("iu", "iku"),
    ("ja", "jpn"),
    ("jv", "jav"),
    ("ka", "kat"),
    ("kg", "kon"),
    ("ki", "kik"),
    ("kk", "kaz"),
    ("kl", "kal"),
    ("km", "khm"),
    ("kn", "kan"),
    ("ko", "kor"),
    ("kr", "kau"),
    ("ks", "kas"),
    ("ku", "kur"),
    ("kv", "kom"),
    ("kw", "cor"),
    ("ky", "kir"),
    ("la", "lat"),
    ("lb", "ltz"),
    ("lg", "lug"),
    ("li", "lim"),
    ("ln", "lin"),
    ("lo", "lao"),
    ("lt", "lit"),
    ("lu", "lub"),
    ("lv", "lav"),
    ("mg", "mlg"),
    ("mh", "mah"),
    ("mi", "mri"),
    ("mk", "mkd"),
    ("ml", "mal"),
    ("mn", "mon"),
    ("mr", "mar"),
    ("ms", "msa"),
    ("mt", "mlt"),
    ("my", "mya"),
    ("na", "nau"),
    ("nb", "nob"),
    ("nd", "nde"),
    ("ne", "nep"),
    ("ng", "ndo"),
    ("nl", "nld"),
    ("nn", "nno"),
    ("no", "nor"),
    ("nr", "nbl"),
    ("nv", "nav"),
    ("ny", "nya"),
    ("oc", "oci"),
    ("oj", "oji"),
    ("om", "orm"),
    ("or", "ori"),
    ("os", "oss"),
    ("pa", "pan"),
    ("pi", "pli"),
    ("pl", "pol"),
    ("ps", "pus"),
    ("pt", "por"),
    ("qu", "que"),
    ("rm", "roh"),
    ("rn", "run"),
    ("ro", "ron"),
    ("ru", "rus"),
    ("rw", "kin"),
    ("sa", "san"),
    ("sc", "srd"),
    ("sd", "snd"),
    ("se", "sme"),
    ("sg", "sag"),
    ("si", "sin"),
    ("sk", "slk"),
    ("sl", "slv"),
    ("sm", "smo"),
    ("sn", "sna"),
    ("so", "som"),
    ("sq", "sqi"),
    ("sr", "srp"),
    ("ss", "ssw"),
    ("st", "sot"),
    ("su", "sun"),
    ("sv", "swe"),
    ("sw", "swa"),
    ("ta", "tam"),
    ("te", "tel"),
    ("tg", "tgk"),
    ("th", "tha"),
    ("ti", "tir"),
    ("tk", "tuk"),
    ("tl", "tgl"),
    ("tn", "tsn"),
    ("to", "ton"),
    ("tr", "tur"),
    ("ts", "tso"),
    ("tt", "tat"),
    ("tw", "twi"),
    ("ty", "tah"),
    ("ug", "uig"),
    ("uk", "ukr"),
    ("ur", "urd"),
    ("uz", "uzb"),
    ("ve", "ven"),
    ("vi", "vie"),
    ("vo", "vol"),
    ("wa", "wln"),
    ("wo", "wol"),
    ("xh", "xho"),
    ("yi", "yid"),
    ("yo", "yor"),
    ("za", "zha"),
    ("zh", "zho"),
    ("zu", "zul"),
];

/// A parsed language code: ISO 639-3 language and optional ISO 15924 script.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LanguageCode {
    /// ISO 639-3, lower case (`deu`).
    pub language: String,
    /// ISO 15924, title case (`Latn`), when given.
    pub script: Option<String>,
}

impl std::fmt::Display for LanguageCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.script {
            Some(s) => write!(f, "{}_{s}", self.language),
            None => f.write_str(&self.language),
        }
    }
}

impl LanguageCode {
    /// Parses `deu`, `deu_Latn`, `deu-Latn`, `de`, `de_Latn` (any case). Returns the code
    /// and, for a two-letter alias, the alias it was mapped from.
    pub fn parse(code: &str) -> Result<(Self, Option<String>)> {
        let bad = |why: &str| {
            LaseError::InvalidArgument(format!(
                "language code {code:?}: {why} (expected ISO 639-3 with an optional script, e.g. deu, deu_Latn, zho_Hans; 2-letter ISO 639-1 aliases such as de are mapped)"
            ))
        };
        let mut parts = code.trim().splitn(2, ['_', '-']);
        let base = parts.next().unwrap_or_default().to_ascii_lowercase();
        let script = match parts.next() {
            None => None,
            Some(s) if s.len() == 4 && s.chars().all(|c| c.is_ascii_alphabetic()) => {
                let mut t = s.to_ascii_lowercase();
                t[..1].make_ascii_uppercase();
                Some(t)
            }
            Some(_) => return Err(bad("the script must be 4 letters (ISO 15924)")),
        };
        if !base.chars().all(|c| c.is_ascii_lowercase()) {
            return Err(bad("the language must be letters"));
        }
        let (language, alias) = match base.len() {
            3 => (base, None),
            2 => match ISO_639_1.binary_search_by(|(two, _)| two.cmp(&base.as_str())) {
                Ok(i) => (ISO_639_1[i].1.to_owned(), Some(code.trim().to_owned())),
                Err(_) => return Err(bad("unknown ISO 639-1 code")),
            },
            _ => return Err(bad("the language must be 2 or 3 letters")),
        };
        Ok((Self { language, script }, alias))
    }

    /// [`LanguageCode::parse`] of a code that may end in a region, as test sets from
    /// elsewhere name their folders (TICO-19's `es_LA`, `pt_BR`, `ti_ER`; `es_419`): ISO
    /// 3166 letters in upper case or UN M.49 digits after the last `_` or `-`, read and
    /// left out (a region does not change the language). Returns what
    /// [`LanguageCode::parse`] returns for the code without its region (the code, and a
    /// two-letter alias it was mapped from). Recipes and `--langs` take no region:
    /// [`LanguageCode::parse`] refuses one there.
    pub fn parse_with_region(code: &str) -> Result<(Self, Option<String>)> {
        let code = code.trim();
        let without_region = code.rsplit_once(['_', '-']).and_then(|(head, region)| {
            let letters = region.len() == 2 && region.chars().all(|c| c.is_ascii_uppercase());
            let digits = region.len() == 3 && region.chars().all(|c| c.is_ascii_digit());
            (letters || digits).then_some(head)
        });
        Self::parse(without_region.unwrap_or(code))
    }

    /// Whether `self` (what a user asked for) names `other` (a code a data set uses):
    /// the same language, or an individual language and its macro-language (`cmn` and
    /// `zho`), and the same script when both give one.
    pub fn names(&self, other: &LanguageCode) -> bool {
        let same_language = self.language == other.language
            || macro_language(&self.language) == macro_language(&other.language);
        let same_script = match (&self.script, &other.script) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        same_language && same_script
    }
}

/// Normalises a code as the data and recipes store it (`de` -> `deu`, `DEU-latn` ->
/// `deu_Latn`), logging when a 2-letter alias was mapped.
pub fn normalize(code: &str) -> Result<String> {
    let (parsed, alias) = LanguageCode::parse(code)?;
    if let Some(a) = alias {
        tracing::info!("language code {a:?} read as ISO 639-3 {parsed}");
    }
    Ok(parsed.to_string())
}

/// Which of a suite's `available` codes (in its own scheme) the user's `wanted` codes
/// name. Each wanted code is parsed (2-letter aliases mapped, said in the log); one that
/// names an exact available code takes only that one, otherwise every available code of
/// the same language (and script, when given). A wanted code no available code matches
/// is skipped with a note, since one `--langs` list serves suites with different
/// languages; `pivot` (English for xx-eng suites) is skipped silently. An invalid code,
/// or a list that names none of the suite's languages, is an error naming `what`.
pub fn resolve(
    wanted: &[String],
    available: &[String],
    pivot: Option<&str>,
    what: &str,
) -> Result<Vec<String>> {
    let parsed_available: Vec<Option<LanguageCode>> = available
        .iter()
        .map(|a| LanguageCode::parse(a).ok().map(|(c, _)| c))
        .collect();
    let pivot = pivot
        .and_then(|p| LanguageCode::parse(p).ok())
        .map(|(c, _)| c);
    let mut chosen: Vec<String> = Vec::new();
    let mut skipped = Vec::new();
    for w in wanted {
        if available.iter().any(|a| a == w) {
            if !chosen.contains(w) {
                chosen.push(w.clone());
            }
            continue;
        }
        let (code, alias) = LanguageCode::parse(w)?;
        if let Some(a) = &alias {
            tracing::info!("{what}: language code {a:?} read as ISO 639-3 {code}");
        }
        if pivot.as_ref().is_some_and(|p| code.names(p)) {
            continue;
        }
        let matches: Vec<&String> = available
            .iter()
            .zip(&parsed_available)
            .filter(|(_, p)| p.as_ref().is_some_and(|p| code.names(p)))
            .map(|(a, _)| a)
            .collect();
        if matches.is_empty() {
            skipped.push(w.clone());
        }
        for m in matches {
            if !chosen.contains(m) {
                chosen.push(m.clone());
            }
        }
    }
    if !skipped.is_empty() {
        tracing::warn!("{what}: no data for {}; skipped", skipped.join(", "));
    }
    if chosen.is_empty() {
        return Err(LaseError::InvalidArgument(format!(
            "{what}: none of the languages {} is available here",
            wanted.join(",")
        )));
    }
    Ok(chosen)
}

/// ISO 639-3 individual languages grouped under the macro-language code that some data
/// sets use instead (Tatoeba-Challenge `zho` holds `cmn`/`yue`/`wuu` lines, LASER's
/// Tatoeba uses `cmn`, `lvs`, `pes`, `swh`, `zsm`, ...). Unknown codes map to themselves.
pub fn macro_language(code: &str) -> &str {
    let base = code.split(['_', '-']).next().unwrap_or(code);
    match base {
        "cmn" | "yue" | "wuu" | "gan" | "hak" | "nan" | "lzh" => "zho",
        "lvs" | "ltg" => "lav",
        "pes" | "prs" => "fas",
        "swh" | "swc" => "swa",
        "zsm" | "zlm" | "max" => "msa",
        "nob" | "nno" => "nor",
        "arb" | "arz" | "arq" | "ary" | "apc" | "acm" => "ara",
        "ekk" => "est",
        "bos" | "hrv" | "srp" | "hbs" => "hbs",
        "kmr" | "ckb" => "kur",
        "uzn" => "uzb",
        "azj" => "aze",
        "khk" => "mon",
        "ydd" => "yid",
        "fil" => "tgl",
        _ => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macro_languages_group_individual_codes() {
        assert_eq!(macro_language("cmn_Hans"), "zho");
        assert_eq!(macro_language("lvs"), "lav");
        assert_eq!(macro_language("deu"), "deu");
        assert_eq!(macro_language("fil"), "tgl");
    }

    #[test]
    fn the_alias_table_is_sorted_for_binary_search() {
        assert!(ISO_639_1.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn parses_three_letter_codes_scripts_and_aliases() {
        let (c, alias) = LanguageCode::parse("de").unwrap();
        assert_eq!(
            (c.to_string(), alias.as_deref()),
            ("deu".into(), Some("de"))
        );
        let (c, alias) = LanguageCode::parse("ZHO-hans").unwrap();
        assert_eq!((c.to_string(), alias), ("zho_Hans".into(), None));
        assert_eq!(normalize("fr_Latn").unwrap(), "fra_Latn");
        for bad in ["xq", "de_Lat", "d3u", "deutsch", ""] {
            assert!(LanguageCode::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_region_is_read_and_left_out_only_where_asked() {
        for (code, read) in [
            ("es_LA", "spa"),
            ("pt-BR", "por"),
            ("ti_ER", "tir"),
            ("es_419", "spa"),
            ("zh_Hant_TW", "zho_Hant"),
            ("deu", "deu"),
            ("de_Latn", "deu_Latn"),
        ] {
            let got = LanguageCode::parse_with_region(code).unwrap().0.to_string();
            assert_eq!(got, read, "{code}");
        }
        // Lower case is not a region (`de-en` is two languages), and plain parse takes none.
        for bad in ["de-en", "es_la", "pt_BR_Latn", "es_4190"] {
            assert!(LanguageCode::parse_with_region(bad).is_err(), "{bad}");
        }
        assert!(LanguageCode::parse("es_LA").is_err());
    }

    #[test]
    fn one_list_resolves_against_each_suites_codes() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let wanted = s(&["en", "de", "deu", "zh"]);
        // STS-B names its files with 2-letter codes.
        let sts = s(&["de", "en", "es", "zh", "ko"]);
        assert_eq!(
            resolve(&wanted, &sts, None, "sts").unwrap(),
            s(&["en", "de", "zh"])
        );
        // Tatoeba (LASER) uses 3-letter codes, cmn for Mandarin; English is the pivot.
        let tatoeba = s(&["cmn", "deu", "fra"]);
        assert_eq!(
            resolve(&wanted, &tatoeba, Some("eng"), "tatoeba").unwrap(),
            s(&["deu", "cmn"])
        );
        // FLORES: both Chinese scripts unless one is named.
        let flores = s(&["deu_Latn", "eng_Latn", "zho_Hans", "zho_Hant"]);
        assert_eq!(
            resolve(&wanted, &flores, Some("eng_Latn"), "flores").unwrap(),
            s(&["deu_Latn", "zho_Hans", "zho_Hant"])
        );
        assert_eq!(
            resolve(&s(&["zh_Hant"]), &flores, Some("eng_Latn"), "flores").unwrap(),
            s(&["zho_Hant"])
        );
        let err = resolve(&s(&["ko"]), &flores, None, "flores")
            .unwrap_err()
            .to_string();
        assert!(err.contains("flores") && err.contains("ko"), "{err}");
        assert!(resolve(&s(&["xx1"]), &flores, None, "flores").is_err());
    }
}
