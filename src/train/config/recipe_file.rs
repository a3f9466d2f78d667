//! Reading a recipe file: TOML errors that name the file and line, and command-line
//! `--set KEY=VALUE` changes.

use std::path::{Path, PathBuf};

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

/// How many files one recipe may chain through `extends` (itself included): far more than
/// a sweep needs, few enough that a runaway chain is refused at once.
const MAX_EXTENDS_CHAIN: usize = 16;

/// Reads a TOML recipe file, with the recipes it `extends`, and applies `overrides` in
/// order; an error names the file (or `--set`) whose value is at fault and, where it can,
/// the line.
///
/// A recipe whose top-level `extends = "base.toml"` names another recipe (a path taken from
/// the folder of the recipe's path as given) is that base with the recipe's keys laid over
/// it: tables merge key by key and any other value (a number, a string, an array such as
/// `data.sources`) replaces the base's; no key can be removed this way (`--set KEY=`
/// removes one). A base may extend another, up to [`MAX_EXTENDS_CHAIN`] files; a loop is
/// an error. What trains is the merged recipe (the run folder's `config.toml` records it,
/// and a resumed run compares it), so an arm of a sweep can state only what it changes.
pub fn read_recipe<T: serde::de::DeserializeOwned>(
    path: &Path,
    overrides: &[RecipeOverride],
) -> Result<T> {
    let chain = RecipeChain::read(path)?;
    if chain.layers.len() == 1 && overrides.is_empty() {
        // One file: the parser's spans point at the line at fault.
        return parse_toml(&chain.layers[0].text, path);
    }
    let mut table = chain.merged.clone();
    for o in overrides {
        o.apply(&mut table)
            .map_err(|m| LaseError::bad_file(path, m))?;
    }
    // The merged recipe as text, so that an error's span names the key at fault.
    let text = toml::to_string_pretty(&table)
        .map_err(|e| LaseError::bad_file(path, format!("merging the recipe: {e}")))?;
    toml::from_str(&text).map_err(|e| chain.locate(&e, &text, overrides))
}

/// A recipe setting's error `message` ("optimizer.beta1 = 2: must be in [0, 1)", from the
/// range and combination checks after reading) with where the value was set: `FILE:LINE:`
/// of the file of `path`'s extends chain whose value was used, `FILE: with --set KEY:`, or
/// the recipe itself when the message names no key.
pub fn locate_setting_error(path: &Path, overrides: &[RecipeOverride], message: &str) -> String {
    let plain = || format!("{}: {message}", path.display());
    let mut keys = setting_keys(message);
    // A top-level key ("mcl_weight = -1: ...") has no dot for setting_keys to find.
    if keys.is_empty()
        && let Some((head, _)) = message.split_once(" = ")
        && head.starts_with(|c: char| c.is_ascii_lowercase())
        && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        keys.push(vec![head.to_owned()]);
    }
    // A --set of any key the message names is the change that made it fail.
    if let Some(o) = last_set_of(overrides, &keys) {
        return set_error(path, &[o], message.to_owned()).to_string();
    }
    // One key's range ("KEY = V: must be ..."): the file and line that set it. A check of
    // several keys at once names no single line.
    let single = message
        .split_once(" = ")
        .is_some_and(|(head, _)| keys.first().is_some_and(|k| k.join(".") == head));
    let (Some(key), true) = (keys.first(), single) else {
        return plain();
    };
    let Ok(chain) = RecipeChain::read(path) else {
        return plain();
    };
    chain.at_key(key, message.to_owned()).to_string()
}

/// The last `--set` of any of `keys` (or of a table holding one): the value that was used.
fn last_set_of<'a>(
    overrides: &'a [RecipeOverride],
    keys: &[Vec<String>],
) -> Option<&'a RecipeOverride> {
    overrides
        .iter()
        .rev()
        .find(|o| keys.iter().any(|k| k.starts_with(&o.keys)))
}

/// `message` about the `--set` changes `sets` of the recipe at `recipe`.
fn set_error(recipe: &Path, sets: &[&RecipeOverride], message: String) -> LaseError {
    let shown: Vec<String> = sets.iter().map(|o| o.keys.join(".")).collect();
    LaseError::bad_file(
        recipe,
        format!("with --set {}: {message}", shown.join(", ")),
    )
}

/// The dotted keys (`optimizer.beta1`, `model.heads`) a setting's error message names, in
/// order.
fn setting_keys(message: &str) -> Vec<Vec<String>> {
    message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| {
            w.contains('.')
                && w.starts_with(|c: char| c.is_ascii_lowercase())
                && !w.split('.').any(str::is_empty)
                && !w
                    .split('.')
                    .any(|p| p.starts_with(|c: char| c.is_ascii_digit()))
        })
        .map(dotted_parts)
        .collect()
}

/// One file of a recipe's `extends` chain: its path, text and table (`extends` removed).
struct RecipeLayer {
    path: PathBuf,
    text: String,
    table: toml::Table,
}

/// A recipe file and the bases it extends (the file first), and their merged table.
struct RecipeChain {
    layers: Vec<RecipeLayer>,
    merged: toml::Table,
}

impl RecipeChain {
    fn read(path: &Path) -> Result<Self> {
        let mut layers: Vec<RecipeLayer> = Vec::new();
        let mut seen: Vec<PathBuf> = Vec::new();
        let mut next = Some(path.to_path_buf());
        while let Some(here) = next.take() {
            let text = crate::io::text::read_text(&here)?;
            let mut table: toml::Table = parse_toml(&text, &here)?;
            seen.push(std::fs::canonicalize(&here).unwrap_or_else(|_| here.clone()));
            if let Some(value) = table.remove("extends") {
                let line = line_of_key(&text, &["extends".to_owned()]).unwrap_or(1);
                let refuse = |m: String| Err(LaseError::bad_line(&here, line, m));
                let Some(base) = value.as_str() else {
                    return refuse(format!(
                        "extends must be the path of a recipe file (a string), not a {}",
                        value.type_str()
                    ));
                };
                let base_path = here.parent().unwrap_or(Path::new("")).join(base);
                if !base_path.is_file() {
                    return refuse(format!(
                        "extends = {base:?}: no recipe file at {} (the path is taken from this recipe's folder)",
                        base_path.display()
                    ));
                }
                let canonical =
                    std::fs::canonicalize(&base_path).unwrap_or_else(|_| base_path.clone());
                if seen.contains(&canonical) {
                    return refuse(format!(
                        "extends = {base:?}: {} is already in this chain of recipes (a loop)",
                        base_path.display()
                    ));
                }
                if seen.len() == MAX_EXTENDS_CHAIN {
                    return refuse(format!(
                        "extends = {base:?}: more than {MAX_EXTENDS_CHAIN} recipe files in one chain"
                    ));
                }
                next = Some(base_path);
            }
            layers.push(RecipeLayer {
                path: here,
                text,
                table,
            });
        }
        let mut merged = toml::Table::new();
        for layer in layers.iter().rev() {
            lay_over(&mut merged, layer.table.clone());
        }
        Ok(Self { layers, merged })
    }

    /// The error `e` about the merged recipe `merged_text`: on the `--set` that gave the
    /// key at fault, else at the line of the file whose value was used (the first in the
    /// chain that sets the key, or the table or array holding it), else on the recipe.
    fn locate(
        &self,
        e: &toml::de::Error,
        merged_text: &str,
        overrides: &[RecipeOverride],
    ) -> LaseError {
        let recipe = &self.layers[0].path;
        let message = e.message().trim().replace('\n', " ");
        // A missing key was set by no file and no --set: the recipe, as it is.
        if message.starts_with("missing field") {
            return LaseError::bad_file(recipe, message);
        }
        let Some(at_fault) = fault_path(&message, e.span().map(|s| s.start), merged_text) else {
            return if overrides.is_empty() {
                LaseError::bad_file(recipe, message)
            } else {
                set_error(recipe, &overrides.iter().collect::<Vec<_>>(), message)
            };
        };
        match last_set_of(overrides, std::slice::from_ref(&at_fault)) {
            Some(o) => set_error(recipe, &[o], message),
            None => self.at_key(&at_fault, message),
        }
    }

    /// `message` at the file (and line) of the chain whose value of `key` was used (the
    /// first that sets it, or the table or array holding it), noting a base; else on the
    /// recipe.
    fn at_key(&self, key: &[String], message: String) -> LaseError {
        let recipe = &self.layers[0].path;
        let Some(layer) = self.layers.iter().find(|l| decides(&l.table, key)) else {
            return LaseError::bad_file(recipe, message);
        };
        let message = if layer.path == *recipe {
            message
        } else {
            format!("{message} (a base that {} extends)", recipe.display())
        };
        match line_of_key(&layer.text, key) {
            Some(line) => LaseError::bad_line(&layer.path, line, message),
            None => LaseError::bad_file(&layer.path, message),
        }
    }
}

/// Whether `table` decides the value at `path`: it sets the key, or a non-table value (an
/// array, a scalar) on the way to it, which replaces whatever a base holds there.
fn decides(table: &toml::Table, path: &[String]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match table.get(first) {
        None => false,
        Some(toml::Value::Table(inner)) if !rest.is_empty() => decides(inner, rest),
        Some(_) => true,
    }
}

/// The full key path (sections and key) an error is about: the section and key its message
/// names, completed by the table at its span; else the key set on the line at its span.
fn fault_path(message: &str, span_start: Option<usize>, text: &str) -> Option<Vec<String>> {
    let split = |dotted: &str| -> Vec<String> { dotted.split('.').map(str::to_owned).collect() };
    let at_span = span_start.and_then(|at| key_path_at(text, at));
    match named_key(message) {
        Some((Some(section), key)) => {
            let mut path = split(section);
            path.push(key.to_owned());
            Some(path)
        }
        Some((None, key)) => {
            if let Some(path) = at_span.filter(|p| p.last().is_some_and(|k| k == key)) {
                return Some(path);
            }
            // The span is the table the key is in (its header, or a line inside it).
            let mut path = span_start.map_or_else(Vec::new, |at| header_at(text, at));
            path.push(key.to_owned());
            Some(path)
        }
        // A span on a table or an array of tables (`[[data.sources]]`: an error inside a
        // tagged enum has no key's span, only its array's): that table or array.
        None => at_span.or_else(|| {
            let header = span_start.map(|at| header_at(text, at))?;
            (!header.is_empty()).then_some(header)
        }),
    }
}

/// The table header (`[a.b]` or `[[a.b]]`, as its parts) a byte `offset` of TOML `text` is
/// under, or at when its line is a header; empty at the top level.
fn header_at(text: &str, offset: usize) -> Vec<String> {
    let offset = offset.min(text.len());
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    text[..line_end]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map_or_else(Vec::new, header_parts)
}

/// `[a.b]` / `[[a.b]]` as ["a", "b"].
fn header_parts(line: &str) -> Vec<String> {
    dotted_parts(line.trim_matches(|c| c == '[' || c == ']'))
}

/// A dotted key (`a.b`, `"a".b`) as its parts, quotes and spaces trimmed.
fn dotted_parts(key: &str) -> Vec<String> {
    key.split('.')
        .map(|p| p.trim().trim_matches('"').to_owned())
        .collect()
}

/// The full key path set on the line of TOML `text` at byte `offset` (its table's header
/// and its own dotted key), when that line sets a key.
fn key_path_at(text: &str, offset: usize) -> Option<Vec<String>> {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next()?.trim();
    if line.starts_with('[') || line.starts_with('{') {
        return None;
    }
    let (key, _) = line.split_once('=')?;
    let mut path = header_at(text, line_start.saturating_sub(1));
    if line_start == 0 {
        path.clear();
    }
    path.extend(dotted_parts(key));
    Some(path)
}

/// The line (1-based) of TOML `text` that sets `path` (sections and key): the line whose
/// header and key make the path, or the (first) header that is the path; else an inline
/// table or array on the way to it that names the key; else one on the way to it; else any
/// line setting a key of that name.
fn line_of_key(text: &str, path: &[String]) -> Option<usize> {
    let last = path.last()?;
    let mut header: Vec<String> = Vec::new();
    let mut best: Option<(u8, usize)> = None;
    let mut consider = |rank: u8, line: usize| {
        if best.is_none_or(|(r, _)| rank < r) {
            best = Some((rank, line));
        }
    };
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            let line = line.split('#').next().unwrap_or(line).trim();
            header = header_parts(line);
            if header.as_slice() == path {
                return Some(i + 1);
            }
            continue;
        }
        if line.starts_with('{') {
            // A table of a multi-line array (`sources = [` ... `{ path = ... },`).
            if sets_inline(line, last) {
                consider(2, i + 1);
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let mut here = header.clone();
        here.extend(dotted_parts(key));
        if here.as_slice() == path {
            return Some(i + 1);
        }
        if path.starts_with(&here) {
            consider(if sets_inline(value, last) { 1 } else { 3 }, i + 1);
        } else if here.last() == Some(last) {
            consider(4, i + 1);
        }
    }
    best.map(|(_, line)| line)
}

/// Whether the TOML fragment `s` sets `key` (`key = `, at a word boundary).
fn sets_inline(s: &str, key: &str) -> bool {
    s.match_indices(key).any(|(at, _)| {
        let before = s[..at].chars().next_back();
        let boundary = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
        let after = s[at + key.len()..].trim_start();
        boundary && after.starts_with('=') && !after.starts_with("==")
    })
}

/// Lays `over`'s keys over `base`: tables merge key by key, any other value replaces.
fn lay_over(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(value)) => lay_over(inner, value),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
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
    use super::{MAX_EXTENDS_CHAIN, RecipeOverride};

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

    /// Writes `text` as `name` (folders made) in `dir`; its path.
    fn write_recipe(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The error reading the recipe at `path` gives (it must give one).
    fn recipe_error(path: &std::path::Path) -> String {
        TrainConfig::from_file(path).unwrap_err().to_string()
    }

    /// The same with `--set` changes (each `KEY=VALUE`).
    fn recipe_error_with(path: &std::path::Path, sets: &[&str]) -> String {
        let sets: Vec<RecipeOverride> = sets.iter().map(|s| s.parse().unwrap()).collect();
        TrainConfig::from_file_with(path, &sets)
            .unwrap_err()
            .to_string()
    }

    /// A recipe that `extends` another is the base with its keys laid over: nested tables
    /// merge (the base's other keys stay), arrays and values replace; the result is what
    /// `--set` of the same keys makes of the base, and a chain of three merges in order.
    #[test]
    fn extends_lays_a_recipe_over_its_base() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| write_recipe(dir.path(), name, text);
        let base = write(
            "base.toml",
            "[model]\nlayers = 4\noutput_dim = 128\n\n[data]\nexclude_test_sets = false\nsources = [{ format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }, { format = \"tsv\", path = \"b.tsv\", src_lang = \"fra\", tgt_lang = \"eng\" }]\n\n[objective]\ncontrastive = \"info-nce\"\ntemperature = 0.07\n\n[objective.distillation]\nteacher = \"t\"\nmse = 2.0\n\n[schedule]\nsteps = 500\n",
        );
        // In a sub-folder: the base's path is taken from the recipe's own folder.
        let arm = write(
            "arms/arm.toml",
            "extends = \"../base.toml\"\n\n[model]\nlayers = 2\n\n[data]\nsources = [{ format = \"tsv\", path = \"c.tsv\", src_lang = \"rus\", tgt_lang = \"eng\" }]\n\n[objective.distillation]\nmse = 4.0\n\n[schedule]\nsteps = 1000\n",
        );
        let set = |s: &str| s.parse::<RecipeOverride>().unwrap();
        let plain = TrainConfig::from_file(&base).unwrap();
        let merged = TrainConfig::from_file(&arm).unwrap();
        let by_set = TrainConfig::from_file_with(
            &base,
            &[
                set("model.layers=2"),
                set("data.sources=[{ format = \"tsv\", path = \"c.tsv\", src_lang = \"rus\", tgt_lang = \"eng\" }]"),
                set("objective.distillation.mse=4.0"),
                set("schedule.steps=1000"),
            ],
        )
        .unwrap();
        assert_eq!(merged, by_set);
        assert_ne!(merged, plain);
        // Kept from the base: keys of merged tables the arm does not name.
        assert_eq!(merged.model.output_dim, Some(128));
        assert_eq!(merged.objective.settings, plain.objective.settings);
        let (d, d0) = (
            merged.objective.distillation.as_ref().unwrap(),
            plain.objective.distillation.as_ref().unwrap(),
        );
        assert_eq!(d.teacher, d0.teacher);
        assert_eq!(d.settings.get("mse"), Some(&toml::Value::Float(4.0)));
        assert_eq!(d0.settings.get("mse"), Some(&toml::Value::Float(2.0)));
        // Replaced: the array of sources is the arm's alone.
        assert_eq!(merged.data.sources.len(), 1);
        assert_eq!(plain.data.sources.len(), 2);

        // A third file extends the arm: later files win, key by key.
        let third = write(
            "third.toml",
            "extends = \"arms/arm.toml\"\n[schedule]\nsteps = 7\n",
        );
        let chained = TrainConfig::from_file(&third).unwrap();
        assert_eq!(chained.schedule.steps, 7);
        assert_eq!(chained.model.layers, 2);
        assert_eq!(chained.model.output_dim, Some(128));
        // --set applies over the merged chain.
        let set_over = TrainConfig::from_file_with(&third, &[set("model.layers=3")]).unwrap();
        assert_eq!((set_over.model.layers, set_over.schedule.steps), (3, 7));
    }

    /// The file blamed is the one whose value was used, whatever form each file gives the
    /// key in (a `[section]` header, a dotted key, an inline table, an array of tables).
    #[test]
    fn extends_errors_blame_the_value_used_in_any_form() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| write_recipe(dir.path(), name, text);
        let err = recipe_error;
        write(
            "base.toml",
            "[data]\nexclude_test_sets = false\nsources = [\n  { format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" },\n]\n\n[objective]\ncontrastive = \"info-nce\"\n\n[objective.distillation]\nteacher = \"t\"\nmse = 2.0\n\n[schedule]\nsteps = 10\n",
        );
        // The arm's dotted key over the base's header: the arm's line.
        let e = err(&write(
            "dotted.toml",
            "extends = \"base.toml\"\nschedule.steps = \"many\"\n",
        ));
        assert!(e.contains("dotted.toml:2:"), "{e}");
        // The arm's inline table over the base's header.
        let e = err(&write(
            "inline.toml",
            "extends = \"base.toml\"\n\n[objective]\ndistillation = { mse = \"bad\" }\n",
        ));
        assert!(e.contains("inline.toml:4:") && e.contains("mse"), "{e}");
        // The base's inline table under the arm's header that sets another key.
        write(
            "inline-base.toml",
            "[data]\nexclude_test_sets = false\nsources = [{ format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\n\n[objective]\ncontrastive = \"info-nce\"\ndistillation = { teacher = \"t\", mse = \"bad\" }\n",
        );
        let e = err(&write(
            "header-arm.toml",
            "extends = \"inline-base.toml\"\n\n[objective.distillation]\nsoft_contrastive = 1.0\n",
        ));
        assert!(
            e.contains("inline-base.toml:7:") && e.contains("header-arm.toml extends"),
            "{e}"
        );
        // A base's top-level dotted key, beside an arm's array of tables that sets a key
        // of the same name.
        write(
            "dotted-base.toml",
            "tokenizer.path = 5\n[data]\nexclude_test_sets = false\nsources = [{ format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\n",
        );
        let e = err(&write(
            "tables-arm.toml",
            "extends = \"dotted-base.toml\"\n\n[[data.sources]]\nformat = \"tsv\"\npath = \"c.tsv\"\nsrc_lang = \"rus\"\ntgt_lang = \"eng\"\n",
        ));
        assert!(e.contains("dotted-base.toml:1:"), "{e}");
        // A bad value inside the arm's array of tables (which replaces the base's array)
        // (the sources' tagged enum gives no key's span, only the array's, in one file as
        // in a chain: the array's first header)
        let bad_sources = "\n[[data.sources]]\nformat = \"tsv\"\npath = \"c.tsv\"\nsrc_lang = \"rus\"\ntgt_lang = \"eng\"\n\n[[data.sources]]\nformat = \"tsv\"\npath = \"d.tsv\"\nsrc_lang = \"fra\"\ntgt_lang = 3\n";
        let e = err(&write(
            "bad-source.toml",
            &format!("extends = \"base.toml\"\n{bad_sources}"),
        ));
        assert!(
            e.contains("bad-source.toml:3:") && !e.contains("(a base"),
            "{e}"
        );
        let alone = err(&write(
            "alone.toml",
            &format!("[data]\nexclude_test_sets = false{bad_sources}"),
        ));
        assert!(alone.contains("alone.toml:3:"), "{alone}");
    }

    /// A value out of its range (found after reading, by the range checks) names the file
    /// and line that set it, through a chain too, or the --set that did.
    #[test]
    fn range_errors_name_where_the_value_was_set() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| write_recipe(dir.path(), name, text);
        let err = recipe_error;
        let base = write(
            "base.toml",
            "[data]\nexclude_test_sets = false\nsources = [{ format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\n\n[optimizer]\nlr = 1e-4\nbeta1 = 2.0\n",
        );
        let e = err(&base);
        assert!(e.contains("base.toml:7: optimizer.beta1 = 2"), "{e}");
        let arm = write(
            "sub/arm.toml",
            "extends = \"../base.toml\"\n[schedule]\nsteps = 2\n",
        );
        let e = err(&arm);
        assert!(
            e.contains("base.toml:7: optimizer.beta1") && e.contains("(a base that"),
            "{e}"
        );
        let mended = write(
            "sub/mended.toml",
            "extends = \"arm.toml\"\noptimizer.beta1 = 0.9\n",
        );
        let e = recipe_error_with(&mended, &["optimizer.beta2=7"]);
        assert!(
            e.contains("mended.toml: with --set optimizer.beta2: optimizer.beta2 = 7"),
            "{e}"
        );
        let e = recipe_error_with(&mended, &["schedule.steps=0"]);
        assert!(e.contains("with --set schedule.steps"), "{e}");
        let e = recipe_error_with(&arm, &["optimizer.beta1=0.5", "schedule.steps=0"]);
        assert!(e.contains("with --set schedule.steps"), "{e}");
        assert!(TrainConfig::from_file(&mended).is_ok());

        // A check of two keys: the --set of either, else the recipe (no single line).
        let shape = write(
            "shape.toml",
            "[model]\nhidden = 32\nheads = 4\n\n[data]\nexclude_test_sets = false\nsources = [{ format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\n",
        );
        let e = recipe_error_with(&shape, &["model.heads=5"]);
        assert!(e.contains("shape.toml: with --set model.heads: "), "{e}");
        let odd = write(
            "odd.toml",
            &std::fs::read_to_string(&shape)
                .unwrap()
                .replace("heads = 4", "heads = 5"),
        );
        let e = err(&odd);
        assert!(e.contains("odd.toml: model.hidden 32"), "{e}");

        // A missing key was set by nobody: the recipe, not a --set or a base's line.
        let no_data = write("no-data.toml", "[schedule]\nsteps = 10\n");
        let e = recipe_error_with(&no_data, &["schedule.steps=4"]);
        assert!(e.contains("no-data.toml: missing field `data`"), "{e}");
        let top = write(
            "top.toml",
            "extends = \"no-data.toml\"\n[optimizer]\nlr = 1e-4\n",
        );
        let e = err(&top);
        assert!(
            e.contains("top.toml: missing field `data`") && !e.contains("no-data.toml:"),
            "{e}"
        );
    }

    /// Every way an `extends` chain can be wrong is refused naming the file and line to
    /// edit: a bad value in a base (at the base's line), in the recipe itself, a missing
    /// base, a loop, a non-string `extends`, a chain past the limit; a value the recipe
    /// overrides is not an error even when the base's was.
    #[test]
    fn extends_errors_name_the_file_and_line_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| write_recipe(dir.path(), name, text);
        let err = recipe_error;
        write(
            "base.toml",
            "[data]\nexclude_test_sets = false\nsources = [{ format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\n\n[optimizer]\nlr = \"fast\"\n",
        );
        // The base's bad value, used by the arm: the base's line 6.
        let arm = write(
            "arm.toml",
            "extends = \"base.toml\"\n[schedule]\nsteps = 10\n",
        );
        let e = err(&arm);
        assert!(
            e.contains("base.toml:6:") && e.contains("arm.toml extends"),
            "{e}"
        );
        // The arm overrides it: fine.
        let mended = write(
            "mended.toml",
            "extends = \"base.toml\"\n\n[optimizer]\nlr = 1e-4\n",
        );
        assert_eq!(TrainConfig::from_file(&mended).unwrap().optimizer.lr, 1e-4);
        // A bad key in the arm itself: the arm's line.
        let typo = write(
            "typo.toml",
            "extends = \"mended.toml\"\n\n[schedule]\nstepz = 3\n",
        );
        let e = err(&typo);
        assert!(e.contains("typo.toml:4:") && e.contains("stepz"), "{e}");
        let e = err(&write(
            "wrong.toml",
            "extends = \"mended.toml\"\n[schedule]\nsteps = \"many\"\n",
        ));
        assert!(e.contains("wrong.toml:3:"), "{e}");
        // The base is missing.
        let e = err(&write("orphan.toml", "# an arm\nextends = \"gone.toml\"\n"));
        assert!(
            e.contains("orphan.toml:2:") && e.contains("gone.toml"),
            "{e}"
        );
        // A loop.
        write("a.toml", "extends = \"b.toml\"\n");
        let b = write("b.toml", "extends = \"a.toml\"\n");
        let e = err(&b);
        assert!(e.contains("a loop") && e.contains("a.toml:1:"), "{e}");
        // Not a path.
        let e = err(&write("number.toml", "extends = 3\n"));
        assert!(e.contains("number.toml:1:") && e.contains("integer"), "{e}");
        // The limit: 16 files resolve, 17 are refused.
        for i in 0..MAX_EXTENDS_CHAIN {
            write(
                &format!("c{i}.toml"),
                &format!("extends = \"c{}.toml\"\n", i + 1),
            );
        }
        write(&format!("c{MAX_EXTENDS_CHAIN}.toml"), "");
        let e = err(&dir.path().join("c0.toml"));
        assert!(e.contains(&format!("more than {MAX_EXTENDS_CHAIN}")), "{e}");
        let e = err(&dir.path().join("c1.toml"));
        assert!(e.contains("data") && !e.contains("more than"), "{e}");

        // --set over a chain: a base's bad value keeps its file and line; a bad --set is
        // named as such.
        let e = recipe_error_with(&arm, &["schedule.steps=4"]);
        assert!(e.contains("base.toml:6:"), "{e}");
        let e = recipe_error_with(&mended, &["schedule.steps=many"]);
        assert!(e.contains("mended.toml: with --set schedule.steps:"), "{e}");
    }
}
