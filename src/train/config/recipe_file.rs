//! Reading a recipe file: TOML errors that name the file and line, and command-line
//! `--set KEY=VALUE` changes.

use std::path::Path;

use crate::error::{LaseError, Result};

/// One command-line change to a recipe (`--set KEY=VALUE`), for sweeps without a file per
/// point: `student.embedding_size=32` sets a key (the value is read as TOML: 32, 2e-4,
/// true, "text", [1, 2]; anything else is taken as a string) and `student.embedding_size=`
/// (nothing after `=`) removes it, so an optional setting falls back to its default.
#[derive(Clone, Debug, PartialEq)]
pub struct RecipeOverride {
    keys: Vec<String>,
    value: Option<toml::Value>,
}

impl std::str::FromStr for RecipeOverride {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (key, value) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: expected KEY=VALUE, e.g. schedule.steps=300"))?;
        let keys: Vec<String> = key.trim().split('.').map(str::to_owned).collect();
        if keys.iter().any(|k| k.is_empty()) {
            return Err(format!("{s:?}: empty key segment in {key:?}"));
        }
        let value = value.trim();
        let value = (!value.is_empty()).then(|| {
            toml::from_str::<toml::Table>(&format!("v = {value}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(value.to_owned()))
        });
        Ok(Self { keys, value })
    }
}

impl RecipeOverride {
    fn apply(&self, table: &mut toml::Table) -> std::result::Result<(), String> {
        let (last, parents) = self.keys.split_last().expect("at least one key");
        let mut here = table;
        for (depth, key) in parents.iter().enumerate() {
            let entry = here
                .entry(key.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            here = entry.as_table_mut().ok_or_else(|| {
                format!(
                    "--set {}: {} is not a table",
                    self.keys.join("."),
                    self.keys[..=depth].join(".")
                )
            })?;
        }
        match &self.value {
            Some(v) => {
                here.insert(last.clone(), v.clone());
            }
            None => {
                here.remove(last);
            }
        }
        Ok(())
    }
}

/// Reads a TOML recipe file and applies `overrides` in order; an error names the file
/// and, without overrides, the line it points at.
pub fn read_recipe<T: serde::de::DeserializeOwned>(
    path: &Path,
    overrides: &[RecipeOverride],
) -> Result<T> {
    let text = crate::io::text::read_text(path)?;
    if overrides.is_empty() {
        return parse_toml(&text, path);
    }
    let mut table: toml::Table = parse_toml(&text, path)?;
    for o in overrides {
        o.apply(&mut table)
            .map_err(|m| LaseError::bad_file(path, m))?;
    }
    let shown: Vec<String> = overrides.iter().map(|o| o.keys.join(".")).collect();
    T::deserialize(toml::Value::Table(table)).map_err(|e| {
        LaseError::bad_file(
            path,
            format!("with --set {}: {}", shown.join(", "), e.message()),
        )
    })
}

/// Parses a TOML recipe; an error names `path` and the line it points at.
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, path: &Path) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let line = e.span().map_or(0, |span| {
            let start = span.start.min(text.len());
            // Sections read as a whole table (`[objective]`, its losses' keys) report the
            // table's span, or only its header: point at the line that sets the key the
            // message names, within the section it names where it names one.
            let at = named_key(&message)
                .and_then(|(section, key)| key_offset(text, start, section, key))
                .unwrap_or(start);
            text[..at].matches('\n').count() + 1
        });
        LaseError::bad_line(path, line, message)
    })
}

/// The section (when the message names one) and the key a TOML error message is about:
/// "unknown field `k` in [a.b]", "a.b.k: ..." (a loss's settings, where "... in `k`" may
/// name the one key of several), or "... in `k`". Dotted keys give their last part.
fn named_key(message: &str) -> Option<(Option<&str>, &str)> {
    fn after<'a>(from: &'a str, open: &str, close: char) -> Option<&'a str> {
        let rest = &from[from.find(open)? + open.len()..];
        rest.find(close).map(|end| &rest[..end])
    }
    fn last_part(k: &str) -> &str {
        k.rsplit('.').next().unwrap_or(k)
    }
    if let Some(key) = after(message, "unknown field `", '`') {
        return Some((after(message, " in [", ']'), last_part(key)));
    }
    let in_backticks = message
        .rfind("in `")
        .and_then(|at| after(&message[at..], "in `", '`'));
    // "objective.distillation.mse: invalid type ..." (read_settings' prefix).
    let dotted = message
        .split_once(':')
        .map(|(head, _)| head)
        .filter(|head| head.contains('.') && !head.contains(' '));
    match (dotted, in_backticks) {
        (Some(head), key) => {
            let (section, last) = head.rsplit_once('.')?;
            let key = key.map_or(last, last_part);
            (!key.contains('/')).then_some((Some(section), key))
        }
        (None, Some(key)) => Some((None, last_part(key))),
        (None, None) => None,
    }
}

/// Byte offset in `text` of the line setting `key`: within `[section]` (from its header
/// to the next one) when the section is given and has a header, else the first such line
/// from `from` on.
fn key_offset(text: &str, from: usize, section: Option<&str>, key: &str) -> Option<usize> {
    let lines = || {
        text.split_inclusive('\n').scan(0, |offset, line| {
            let at = *offset;
            *offset += line.len();
            Some((at, line.trim()))
        })
    };
    let sets_key = |line: &str| {
        line.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    if let Some(section) = section {
        let header = format!("[{section}]");
        if let Some((start, _)) = lines().find(|(_, l)| *l == header) {
            return lines()
                .skip_while(|(at, _)| *at <= start)
                .take_while(|(_, l)| !l.starts_with('['))
                .find(|(_, l)| sets_key(l))
                .map(|(at, _)| at);
        }
    }
    lines()
        .skip_while(|(at, _)| *at < from)
        .find(|(_, l)| sets_key(l))
        .map(|(at, _)| at)
}

#[cfg(test)]
mod tests {
    use super::super::TrainConfig;

    /// The line a recipe error names is the line to edit: a key of a plain section, and
    /// a key of `[objective]` / `[objective.distillation]` (read as whole tables, whose
    /// own span is the section header), wrongly typed or unknown.
    #[test]
    fn errors_name_the_line_of_the_key_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        let recipe = |tail: &str| {
            let path = dir.path().join("recipe.toml");
            std::fs::write(
                &path,
                format!(
                    "[model]\nhidden = 32\n\n[data]\nexclude_test_sets = false\nsources = [{{ format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }}]\n\n{tail}"
                ),
            )
            .unwrap();
            let err = TrainConfig::from_file(&path).unwrap_err().to_string();
            (err.clone(), err.split(':').nth(1).unwrap().to_owned())
        };
        let cases = [
            ("[optimizer]\nlr = \"fast\"\n", "9", "\"fast\""),
            (
                "[objective]\ncontrastive = \"info-nce\"\n\ntemperature = \"hot\"\n",
                "11",
                "temperature",
            ),
            ("[objective]\n# a comment\nwarmth = 2\n", "10", "warmth"),
            (
                "[objective]\ncontrastive = \"info-nce\"\n\n[objective.distillation]\nteacher = \"t\"\nmse = 1.0\nmse_weight_typo = 3\n",
                "14",
                "mse_weight_typo",
            ),
            // The key is set validly in [objective] and wrongly in the section after.
            (
                "[objective]\ncontrastive = \"info-nce\"\ntemperature = 0.05\n\n[objective.distillation]\nteacher = \"t\"\ntemperature = 0.1\n",
                "14",
                "temperature",
            ),
            (
                "[objective]\ncontrastive = \"info-nce\"\n\n[objective.distillation]\nteacher = \"t\"\nmse = \"lots\"\n",
                "13",
                "mse",
            ),
        ];
        for (tail, line, key) in cases {
            let (err, at) = recipe(tail);
            assert_eq!(at, line, "{err}");
            assert!(err.contains(key) && !err.contains('\n'), "{err}");
        }
    }
}
