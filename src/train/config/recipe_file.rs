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
    let text = std::fs::read_to_string(path).map_err(|e| LaseError::io(path, e))?;
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
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(0);
        LaseError::bad_line(path, line, e.message().to_owned())
    })
}
