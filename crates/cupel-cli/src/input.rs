//! Reading INPUT files (`[budget]`, `[policy]`, `[[items]]`) and policy files.
//!
//! Parsing is strict: every key the CLI does not know is an error naming the
//! key (`items[3].pined`, `policy.scorers[0].wieght`), because a silently
//! ignored typo would change the selection without a trace. So is a key
//! given twice (`budget.reserved_slots.message` as `Message` and `message`;
//! any repeated key of a JSON object), and a JSON document that is not an
//! object. A UTF-8 byte-order mark at the start of a file is skipped, in TOML,
//! JSON and JSON Lines alike. Syntax and type errors carry `file:line:column`.
//!
//! Big inputs: TOML is parsed one `[[items]]` table at a time (see
//! `toml_split`), and JSON Lines (`.jsonl`) is read as a stream, one item per
//! line, so memory stays within a small multiple of the items' size.

use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::Path;

use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, ItemRecord, TokenCounter, TokensOf,
};
use cupel_pipeline::{Policy, PolicyConfig, PolicyTable};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use cupel_core::strict::{
    self, KeyPath, Located, PathSegment as Seg, field_names, line_col, one_line,
};
use cupel_core::{ConfigError, ConfigErrorKind};

use crate::error::CliError;

/// The input syntaxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// TOML 1.1 (native datetimes allowed for `timestamp`).
    Toml,
    /// JSON.
    Json,
    /// JSON Lines: one item object per line (items only; the budget and
    /// policy come from flags or `--header FILE`).
    Jsonl,
}

/// The UTF-8 byte-order mark, skipped at the start of every input.
const BOM: char = '\u{feff}';

/// A file's text, the name to show in messages, and its syntax.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    /// `path` as given, or `<stdin>`.
    pub(crate) name: String,
    /// The whole text.
    pub(crate) text: String,
    /// The syntax to parse it with.
    pub(crate) format: Format,
}

impl Source {
    /// Reads `path` (`-` is stdin). The syntax is `format` if given, else the
    /// file extension (`.toml` / `.json`, any case).
    pub(crate) fn read(path: &str, format: Option<Format>, what: &str) -> Result<Self, CliError> {
        if path == "-" {
            let Some(format) = format else {
                return Err(CliError::input(format!(
                    "reading the {what} from stdin (`-`) needs --input-format"
                ))
                .hint("pass --input-format toml or --input-format json"));
            };
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| CliError::input(format!("cannot read the {what} from stdin: {e}")))?;
            let mut text = utf8_text(bytes, "<stdin>", 1)?;
            strip_bom(&mut text);
            return Ok(Self {
                name: "<stdin>".into(),
                text,
                format,
            });
        }
        let format = match format {
            Some(f) => f,
            None => format_from_extension(path).ok_or_else(|| {
                CliError::input(format!(
                    "cannot tell the format of `{path}` from its extension"
                ))
                .hint("name the file .toml or .json, or pass --input-format toml|json")
            })?,
        };
        let bytes = std::fs::read(path)
            .map_err(|e| CliError::input(format!("cannot read {what} `{path}`: {e}")))?;
        let mut text = utf8_text(bytes, path, 1)?;
        strip_bom(&mut text);
        Ok(Self {
            name: path.to_string(),
            text,
            format,
        })
    }

    /// Whether the document's only top-level key is `key`, holding a table
    /// (TOML) or object (JSON). Unparseable text answers `false`, so the
    /// ordinary parse reports its error.
    pub(crate) fn is_wrapped_in(&self, key: &str) -> bool {
        match self.format {
            Format::Toml => toml::from_str::<toml::Table>(&self.text)
                .is_ok_and(|t| t.len() == 1 && t.get(key).is_some_and(toml::Value::is_table)),
            Format::Json => {
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&self.text)
                    .is_ok_and(|m| {
                        m.len() == 1 && m.get(key).is_some_and(serde_json::Value::is_object)
                    })
            }
            Format::Jsonl => false,
        }
    }

    /// Parses the text as `T`, rejecting unknown keys.
    ///
    /// `unknown` turns the path of the first unknown key into the error.
    pub(crate) fn parse_strict<T: DeserializeOwned>(
        &self,
        unknown: impl Fn(&KeyPath) -> CliError,
    ) -> Result<T, CliError> {
        self.parse_part(&self.text, 0, unknown, false)
    }

    /// As [`parse_strict`](Self::parse_strict), and a type error also names
    /// the key path of the value (`gate.compact_code.rules[0].threshold`).
    /// An unknown key that a type rejects itself (`deny_unknown_fields`)
    /// goes through `unknown` too, so it reads like one found by this reader.
    pub(crate) fn parse_strict_with_paths<T: DeserializeOwned>(
        &self,
        unknown: impl Fn(&KeyPath) -> CliError,
    ) -> Result<T, CliError> {
        self.parse_part(&self.text, 0, unknown, true)
    }

    /// Parses `text` (all of this source, or the part of it that starts at
    /// byte `offset`, for positions in messages) as `T`, rejecting unknown
    /// and repeated keys; with `paths`, type errors name their key path.
    fn parse_part<T: DeserializeOwned>(
        &self,
        text: &str,
        offset: usize,
        unknown: impl Fn(&KeyPath) -> CliError,
        paths: bool,
    ) -> Result<T, CliError> {
        let to_file = |at: usize| offset + at;
        let result: Result<T, ConfigError> = match self.format {
            Format::Toml => {
                let de = toml::de::Deserializer::parse(text)
                    .map_err(|e| self.toml_error_at(&e, true, to_file, None))?;
                strict::deserialize(de).map_err(|e| {
                    e.into_config_error("input", |_| Vec::new(), |e| self.toml_located(e, to_file))
                })
            }
            Format::Jsonl => {
                return Err(CliError::input(format!(
                    "{}: JSON Lines holds items only; this file needs TOML or JSON",
                    self.name
                )));
            }
            Format::Json => {
                if let Some((line, column, what)) = crate::json_check::top_level_problem(text) {
                    return Err(CliError::input(format!(
                        "{}:{line}:{column}: the document must be a JSON object ({{ ... }}), \
                         but it starts with {what}",
                        self.name
                    )));
                }
                crate::json_check::check(text).map_err(|e| self.json_error(&e, None))?;
                let mut de = serde_json::Deserializer::from_str(text);
                let v = strict::deserialize(&mut de)
                    .map_err(|e| e.into_config_error("input", |_| Vec::new(), json_located));
                if v.is_ok() {
                    de.end().map_err(|e| self.json_error(&e, None))?;
                }
                v
            }
        };
        result.map_err(|e| self.strict_error(&e, unknown, paths))
    }

    /// The error for a strict read's failure (see
    /// `StrictError::into_config_error`): an unknown key through `unknown`,
    /// prefixed with the file's name; a bad value as
    /// `NAME:LINE:COL: message`, naming its key path with `paths`.
    fn strict_error(
        &self,
        e: &ConfigError,
        unknown: impl Fn(&KeyPath) -> CliError,
        paths: bool,
    ) -> CliError {
        if e.kind() == ConfigErrorKind::UnknownKey {
            let mut err = unknown(&KeyPath::parse(e.key_path().unwrap_or_default()));
            err.message = format!("{}: {}", self.name, err.message);
            return err;
        }
        let at = e
            .line()
            .zip(e.column())
            .map_or_else(String::new, |(line, col)| format!(":{line}:{col}"));
        let key = match e.key_path() {
            Some(p) if paths => format!("`{p}`: "),
            _ => String::new(),
        };
        let what = if e.kind() == ConfigErrorKind::Syntax {
            "invalid JSON: "
        } else {
            ""
        };
        CliError::input(format!("{}{at}: {key}{what}{}", self.name, e.detail()))
    }

    /// A TOML error as a strict read reports it: `to_file` maps an offset
    /// in the parsed text to one in the file.
    fn toml_located(&self, e: &toml::de::Error, to_file: impl Fn(usize) -> usize) -> Located {
        Located {
            message: one_line(e.message()),
            at: e.span().map(|s| line_col(&self.text, to_file(s.start))),
            syntax: false,
        }
    }

    /// A TOML error; `to_file` maps an offset in the parsed text to one in
    /// the file; `path` is the key path of a type error, when known.
    fn toml_error_at(
        &self,
        e: &toml::de::Error,
        syntax: bool,
        to_file: impl Fn(usize) -> usize,
        path: Option<&str>,
    ) -> CliError {
        let msg = one_line(e.message());
        let what = if syntax { "invalid TOML: " } else { "" };
        let at = e
            .span()
            .map(|s| {
                let (line, col) = line_col(&self.text, to_file(s.start));
                format!(":{line}:{col}")
            })
            .unwrap_or_default();
        let key = path.map_or_else(String::new, |p| format!("`{p}`: "));
        CliError::input(format!("{}{at}: {key}{what}{msg}", self.name))
    }

    fn json_error(&self, e: &serde_json::Error, path: Option<&str>) -> CliError {
        use serde_json::error::Category;
        let msg = one_line(&json_message(e));
        let what = match e.classify() {
            Category::Syntax | Category::Eof => "invalid JSON: ",
            Category::Data | Category::Io => "",
        };
        let at = if e.line() > 0 {
            format!(":{}:{}", e.line(), e.column())
        } else {
            String::new()
        };
        let key = path.map_or_else(String::new, |p| format!("`{p}`: "));
        CliError::input(format!("{}{at}: {key}{what}{msg}", self.name))
    }
}

/// A JSON error as a strict read reports it.
fn json_located(e: &serde_json::Error) -> Located {
    Located {
        message: one_line(&json_message(e)),
        at: (e.line() > 0).then(|| (e.line(), e.column())),
        syntax: matches!(
            e.classify(),
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof
        ),
    }
}

/// serde_json's message without its ` at line L column C` suffix.
fn json_message(e: &serde_json::Error) -> String {
    strict::without_position(&e.to_string(), e.line(), e.column()).to_string()
}

pub(crate) fn format_from_extension(path: &str) -> Option<Format> {
    let ext = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "toml" => Some(Format::Toml),
        "json" => Some(Format::Json),
        "jsonl" | "ndjson" => Some(Format::Jsonl),
        _ => None,
    }
}

/// `bytes` as text, or an error naming the line and column (in characters)
/// of the first byte that is not UTF-8. `first_line` is the line number of
/// the first byte (1 for a whole file; the line's own number for one line
/// of JSON Lines).
pub(crate) fn utf8_text(bytes: Vec<u8>, name: &str, first_line: usize) -> Result<String, CliError> {
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let before = &bytes[..valid];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let line = first_line + before.iter().filter(|&&b| b == b'\n').count();
        // The prefix is valid UTF-8 by definition of `valid_up_to`.
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        let byte = bytes.get(valid).copied().unwrap_or_default();
        CliError::input(format!(
            "{name}:{line}:{column}: not valid UTF-8 (byte 0x{byte:02X}); inputs must be UTF-8 text"
        ))
    })
}

/// Drops a leading UTF-8 byte-order mark (the one rule for TOML, JSON and
/// JSON Lines: skipped, never an error).
fn strip_bom(text: &mut String) {
    if text.starts_with(BOM) {
        text.drain(..BOM.len_utf8());
    }
}

/// `keys` as a hint: `{what} keys are: a, b, c`.
pub(crate) fn keys_hint(what: &str, keys: &[&str]) -> String {
    format!("{what} keys are: {}", keys.join(", "))
}

/// The error for an unknown key inside a policy (`path` relative to the
/// policy table); the hint lists the keys the policy types accept there.
fn unknown_policy_key(path: &KeyPath) -> CliError {
    let e = CliError::input(format!("unknown policy key `{path}`"));
    let keys = PolicyConfig::expected_keys(path);
    match path.parent_field() {
        _ if keys.is_empty() => e,
        None => e.hint(keys_hint("policy", &keys)),
        Some("scorers" | "children" | "inner_scorer") => e.hint(keys_hint("scorer", &keys)),
        Some(field) => e.hint(keys_hint(&format!("`{field}` entry"), &keys)),
    }
}

/// The error for an unknown key in an INPUT file; the hint lists the keys
/// the input types accept there.
fn unknown_input_key(path: &KeyPath) -> CliError {
    let key = |s: &Seg, want: &str| matches!(s, Seg::Key(k) if k == want);
    match path.segments() {
        [p, rest @ ..] if key(p, "policy") && !rest.is_empty() => {
            unknown_policy_key(&KeyPath::from(rest.to_vec()))
        }
        [b, _] if key(b, "budget") => CliError::input(format!("unknown key `{path}`"))
            .hint(keys_hint("budget", &field_names::<BudgetInput>())),
        [i, Seg::Index(_), Seg::Key(k)]
            if key(i, "items") && k.to_ascii_lowercase().contains("group") =>
        {
            CliError::input(format!("unknown item key `{path}`"))
                .hint("an item's atomic group is set with `group = \"<id>\"` (a string)")
        }
        [i, Seg::Index(_), _] if key(i, "items") => {
            CliError::input(format!("unknown item key `{path}`"))
                .hint(keys_hint("item", &field_names::<InputItem>()))
        }
        [_] => CliError::input(format!("unknown top-level key `{path}`")).hint(format!(
            "top-level keys are: {}",
            field_names::<InputFile>().join(", ")
        )),
        _ => CliError::input(format!("unknown key `{path}`")),
    }
}

/// An INPUT file as written.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a table with [budget], [policy] and [[items]]")]
struct InputFile {
    #[serde(default)]
    budget: Option<BudgetInput>,
    #[serde(default)]
    policy: Option<PolicyTable>,
    #[serde(default)]
    items: Option<Vec<InputItem>>,
}

/// One `[[items]]` chunk of a TOML file, parsed on its own.
#[derive(Debug, Deserialize)]
struct ItemChunk {
    items: Vec<InputItem>,
}

/// A `--header` file (or the part of a TOML file that is not items).
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a table with [budget] and [policy]")]
struct HeaderFile {
    #[serde(default)]
    budget: Option<BudgetInput>,
    #[serde(default)]
    policy: Option<PolicyTable>,
}

/// `[budget]`: the fields of [`ContextBudget`], each optional so flags can
/// supply or override them before the budget is validated.
#[derive(Debug, Default, Deserialize)]
#[serde(expecting = "a [budget] table")]
struct BudgetInput {
    #[serde(default, alias = "maxTokens")]
    max_tokens: Option<i64>,
    #[serde(default, alias = "targetTokens")]
    target_tokens: Option<i64>,
    #[serde(default, alias = "outputReserve")]
    output_reserve: Option<i64>,
    #[serde(default, alias = "reservedSlots", deserialize_with = "unique_kinds")]
    reserved_slots: BTreeMap<ContextKind, i64>,
    #[serde(default, alias = "estimationSafetyMarginPercent")]
    estimation_safety_margin_percent: Option<f64>,
}

/// `[budget.reserved_slots]`, rejecting a kind given twice in any ASCII case
/// (`Message = 40` and `message = 0`: one kind; the last would silently win).
fn unique_kinds<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<ContextKind, i64>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = BTreeMap<ContextKind, i64>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a table of kind = tokens")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            use serde::de::Error as _;
            let mut out: BTreeMap<ContextKind, i64> = BTreeMap::new();
            let mut spelled: BTreeMap<ContextKind, String> = BTreeMap::new();
            while let Some(key) = map.next_key::<String>()? {
                let value: i64 = map.next_value()?;
                let kind = ContextKind::new(key.clone()).map_err(A::Error::custom)?;
                if let Some(first) = spelled.get(&kind) {
                    return Err(A::Error::custom(format!(
                        "duplicate key `budget.reserved_slots.{key}`: kind `{kind}` is given \
                         twice (as `{first}` and `{key}`; kinds ignore ASCII case)"
                    )));
                }
                spelled.insert(kind.clone(), key);
                out.insert(kind, value);
            }
            Ok(out)
        }
    }
    d.deserialize_map(V)
}

/// One `[[items]]` entry: core's item schema with the token counts
/// optional (they may be counted with `--encoding`).
type InputItem = ItemRecord<Option<i64>>;

/// The command-line settings that shape a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunSettings {
    /// `--policy PRESET|FILE` (its hidden alias `--preset` too).
    pub(crate) policy: Option<String>,
    /// `--max-tokens`.
    pub(crate) max_tokens: Option<i64>,
    /// `--target-tokens`.
    pub(crate) target_tokens: Option<i64>,
    /// `--output-reserve`.
    pub(crate) output_reserve: Option<i64>,
    /// `--header FILE` (JSON Lines input only): `[budget]` and `[policy]`.
    pub(crate) header: Option<String>,
}

/// Where the policy of a run came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PolicyOrigin {
    /// `--policy FILE`.
    File(String),
    /// `--policy NAME` naming a preset (the canonical name).
    Preset(String),
    /// The `[policy]` table of the input.
    Table(String),
    /// Nothing given: the `chat` preset.
    DefaultPreset,
}

/// `Some((encoding, n))` when `n` items had their tokens counted with `encoding`.
pub(crate) type Counted = Option<(String, usize)>;

/// Everything a run needs, validated.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The items, in input order (tokens counted where missing).
    pub(crate) items: Vec<ContextItem>,
    /// The validated budget.
    pub(crate) budget: ContextBudget,
    /// The policy as configured.
    pub(crate) config: PolicyConfig,
    /// The policy, built.
    pub(crate) policy: Policy,
    /// Where the policy came from.
    pub(crate) origin: PolicyOrigin,
    /// `(encoding, n)`: `n` items had their tokens counted with `encoding`.
    pub(crate) counted: Counted,
}

/// The message of a configuration error without the variant's generic prefix.
fn config_message(e: &CupelError) -> String {
    match e {
        CupelError::PipelineConfig(m) => m.clone(),
        CupelError::Config(c) => c.to_string(),
        other => other.to_string(),
    }
}

/// Reads a policy file (`.json` is JSON, anything else TOML).
fn read_policy_file(path: &str) -> Result<PolicyConfig, CliError> {
    let format = match format_from_extension(path) {
        Some(Format::Json) => Format::Json,
        _ => Format::Toml,
    };
    let src = Source::read(path, Some(format), "policy file")?;
    // A policy copied out of an INPUT file keeps its `[policy]` header; the
    // table under it is the policy (issue 31: it used to fail with "missing
    // field `scorers`"). Only a document whose one top-level key is a
    // `policy` table is read this way.
    let table: PolicyTable = if src.is_wrapped_in("policy") {
        #[derive(serde::Deserialize)]
        struct Wrapped {
            policy: PolicyTable,
        }
        let w: Wrapped = src.parse_strict(|p| match p.segments() {
            [Seg::Key(k), rest @ ..] if k == "policy" && !rest.is_empty() => {
                unknown_policy_key(&KeyPath::from(rest.to_vec()))
            }
            _ => unknown_policy_key(p),
        })?;
        w.policy
    } else {
        src.parse_strict(unknown_policy_key)?
    };
    checked_policy(table)
        .map_err(|e| CliError::input(format!("{path}: invalid policy: {}", config_message(&e))))
}

/// The policy a table describes, every key checked against the component
/// it sits on (and the nesting depth against its limit).
fn checked_policy(table: PolicyTable) -> Result<PolicyConfig, CupelError> {
    let cfg = PolicyConfig::try_from(table)?;
    cfg.check_keys()?;
    Ok(cfg)
}

/// Looks a preset up, with the list of names as a hint.
pub(crate) fn lookup_preset(name: &str) -> Result<cupel_pipeline::Preset, CliError> {
    cupel_pipeline::preset(name).map_err(|_| {
        let names: Vec<&str> = cupel_pipeline::presets().iter().map(|p| p.name).collect();
        CliError::input(format!("unknown preset `{name}`")).hint(format!(
            "known presets: {} (`cupel presets` shows what each configures)",
            names.join(", ")
        ))
    })
}

/// Parses and validates `src` under `settings`, counting missing token counts
/// with `counter` when given.
pub(crate) fn prepare(
    src: &Source,
    settings: &RunSettings,
    counter: Option<(&dyn TokenCounter, &str)>,
) -> Result<Prepared, CliError> {
    prepare_with(src, settings, counter, true)
}

/// [`prepare`], with TOML parsed one `[[items]]` table at a time (`split`)
/// or as one document (what the fuzz target compares it with).
pub(crate) fn prepare_with(
    src: &Source,
    settings: &RunSettings,
    counter: Option<(&dyn TokenCounter, &str)>,
    split: bool,
) -> Result<Prepared, CliError> {
    if settings.header.is_some() {
        return Err(CliError::input("--header is for JSON Lines input only")
            .hint("a TOML or JSON INPUT has its own [budget] and [policy]"));
    }
    let mut items = ItemSink::new(&src.name, counter);
    let header = match src.format {
        Format::Toml => match crate::toml_split::split(&src.text).filter(|_| split) {
            Some(parts) => parse_toml_split(src, &parts, &mut items)?,
            None => parse_whole(src, &mut items)?,
        },
        Format::Json | Format::Jsonl => parse_whole(src, &mut items)?,
    };
    let origin_table = PolicyOrigin::Table(src.name.clone());
    finish(&src.name, header, origin_table, settings, items)
}

/// Parses a whole document, feeding its items to `sink`.
fn parse_whole(src: &Source, sink: &mut ItemSink<'_>) -> Result<HeaderFile, CliError> {
    let file: InputFile = src.parse_strict(unknown_input_key)?;
    for it in file.items.unwrap_or_default() {
        sink.push(it)?;
    }
    Ok(HeaderFile {
        budget: file.budget,
        policy: file.policy,
    })
}

/// Parses a TOML file split at its `[[items]]` headers: the rest as one
/// document, each item chunk on its own (memory near the file size).
fn parse_toml_split(
    src: &Source,
    split: &crate::toml_split::Split,
    sink: &mut ItemSink<'_>,
) -> Result<HeaderFile, CliError> {
    let (rest_text, map) = crate::toml_split::RestMap::build(&src.text, &split.rest);
    let rest: InputFile = {
        let de = toml::de::Deserializer::parse(&rest_text)
            .map_err(|e| src.toml_error_at(&e, true, |at| map.to_file(at), None))?;
        strict::deserialize(de).map_err(|e| {
            let e = e.into_config_error(
                "input",
                |_| Vec::new(),
                |e| src.toml_located(e, |at| map.to_file(at)),
            );
            src.strict_error(&e, unknown_input_key, false)
        })?
    };
    drop(rest_text);
    if rest.items.is_some() && !split.items.is_empty() {
        return Err(CliError::input(format!(
            "{}: `items` is given both as a key and as [[items]] tables",
            src.name
        )));
    }
    for it in rest.items.unwrap_or_default() {
        sink.push(it)?;
    }
    for range in &split.items {
        let index = sink.next_index();
        let text = src.text.get(range.clone()).unwrap_or_default();
        let chunk: ItemChunk = src.parse_part(
            text,
            range.start,
            |path| {
                // The chunk holds one item: `items[0]` is `items[index]`.
                let mut path = path.clone();
                if let Some(Seg::Index(i)) = path.segments_mut().get_mut(1) {
                    *i = index;
                }
                unknown_input_key(&path)
            },
            false,
        )?;
        for it in chunk.items {
            sink.push(it)?;
        }
    }
    Ok(HeaderFile {
        budget: rest.budget,
        policy: rest.policy,
    })
}

/// Reads JSON Lines items from `reader` (one JSON object per line; blank
/// lines skipped; a byte-order mark at the start skipped), with the budget
/// and policy from `--header FILE` and the flags.
pub(crate) fn prepare_jsonl(
    name: &str,
    reader: impl BufRead,
    settings: &RunSettings,
    counter: Option<(&dyn TokenCounter, &str)>,
) -> Result<Prepared, CliError> {
    let (header, origin_table) = match &settings.header {
        Some(path) => {
            let format = match format_from_extension(path) {
                Some(Format::Json) => Format::Json,
                _ => Format::Toml,
            };
            let src = Source::read(path, Some(format), "header file")?;
            let h: HeaderFile = src.parse_strict(unknown_input_key)?;
            (h, PolicyOrigin::Table(path.clone()))
        }
        None => (HeaderFile::default(), PolicyOrigin::Table(name.to_string())),
    };
    let mut sink = ItemSink::new(name, counter);
    let line_src = Source {
        name: name.to_string(),
        text: String::new(),
        format: Format::Json,
    };
    let mut raw = Vec::new();
    let mut reader = reader;
    let mut number = 0usize;
    loop {
        raw.clear();
        let n = reader
            .read_until(b'\n', &mut raw)
            .map_err(|e| CliError::input(format!("cannot read {name}: {e}")))?;
        if n == 0 {
            break;
        }
        number += 1;
        let line = utf8_text(std::mem::take(&mut raw), name, number)?;
        let mut text = line.as_str();
        if number == 1 {
            text = text.strip_prefix(BOM).unwrap_or(text);
        }
        if text.trim().is_empty() {
            continue;
        }
        let index = sink.next_index();
        let item: InputItem = parse_jsonl_line(&line_src, text, number, index)?;
        sink.push(item)?;
    }
    finish(name, header, origin_table, settings, sink)
}

/// One JSON Lines line as an item; errors say `name:LINE:COL`.
fn parse_jsonl_line(
    src: &Source,
    text: &str,
    number: usize,
    index: usize,
) -> Result<InputItem, CliError> {
    let relocate = |e: &Located| {
        let what = if e.syntax { "invalid JSON: " } else { "" };
        CliError::input(format!(
            "{}:{number}:{}: items[{index}]: {what}{}",
            src.name,
            e.at.map_or(0, |(_, col)| col),
            e.message
        ))
    };
    if let Some((_, column, what)) = crate::json_check::top_level_problem(text) {
        return Err(CliError::input(format!(
            "{}:{number}:{column}: items[{index}]: each non-blank line must be one JSON object \
             ({{ ... }}), but this one starts with {what}",
            src.name
        )));
    }
    crate::json_check::check(text).map_err(|e| relocate(&json_located(&e)))?;
    let mut de = serde_json::Deserializer::from_str(text);
    let item: InputItem = strict::deserialize(&mut de).map_err(|e| {
        let e = e.into_config_error("input", |_| Vec::new(), json_located);
        if e.kind() != ConfigErrorKind::UnknownKey {
            return relocate(&Located {
                message: e.detail().to_owned(),
                at: e.line().zip(e.column()),
                syntax: e.kind() == ConfigErrorKind::Syntax,
            });
        }
        let mut full = KeyPath::new();
        full.push_key("items");
        full.push_index(index);
        let mut err =
            unknown_input_key(&full.join(&KeyPath::parse(e.key_path().unwrap_or_default())));
        err.message = format!("{}:{number}: {}", src.name, err.message);
        err
    })?;
    de.end().map_err(|e| relocate(&json_located(&e)))?;
    Ok(item)
}

/// The policy and budget of a run, with its items.
fn finish(
    name: &str,
    header: HeaderFile,
    origin_table: PolicyOrigin,
    settings: &RunSettings,
    sink: ItemSink<'_>,
) -> Result<Prepared, CliError> {
    // Policy: --policy (a preset or a file) > [policy] > the default preset.
    let (config, origin) = if let Some(spec) = &settings.policy {
        config_from_spec(spec)?
    } else if let Some(table) = header.policy {
        let at = match &origin_table {
            PolicyOrigin::Table(f) => f.clone(),
            _ => name.to_string(),
        };
        let cfg = checked_policy(table).map_err(|e| {
            CliError::input(format!("{at}: invalid [policy]: {}", config_message(&e)))
        })?;
        (cfg, origin_table)
    } else {
        (
            lookup_preset("recent-dense")?.config,
            PolicyOrigin::DefaultPreset,
        )
    };
    let policy = build_policy(&config, &origin)?;

    let budget = build_budget(header.budget.unwrap_or_default(), settings)?;
    let counter = sink.counter;
    let (items, counted) = sink.finish()?;
    // A policy's [variants] table (spec chapter 22): the generated forms are
    // counted with the --encoding counter.
    let items = match (&config.variants, counter) {
        (None, _) => items,
        (Some(_), Some((c, _))) => config
            .with_variants(&items, c)
            .map_err(|e| CliError::input(format!("{name}: [variants]: {e}")))?,
        (Some(_), None) => {
            return Err(CliError::input(format!(
                "{name}: the policy declares [variants], and their forms need a token counter"
            ))
            .hint("count them with --encoding ENCODING (e.g. o200k_base)"));
        }
    };
    Ok(Prepared {
        items,
        budget,
        config,
        policy,
        origin,
        counted,
    })
}

/// Builds a policy, naming where it came from when it is invalid.
fn build_policy(config: &PolicyConfig, origin: &PolicyOrigin) -> Result<Policy, CliError> {
    config.build().map_err(|e| {
        let at = match origin {
            PolicyOrigin::File(p) => format!("{p}: "),
            PolicyOrigin::Table(p) => format!("{p}: [policy]: "),
            PolicyOrigin::Preset(_) | PolicyOrigin::DefaultPreset => String::new(),
        };
        CliError::input(format!("{at}invalid policy: {}", config_message(&e)))
    })
}

/// A policy named on the command line by a preset name or a policy file
/// (`cupel compare --policy`): a known preset name wins; anything else is read
/// as a file (write `./chat` for a file named like a preset).
pub(crate) fn policy_from_spec(
    spec: &str,
) -> Result<(PolicyConfig, PolicyOrigin, Policy), CliError> {
    let (config, origin) = config_from_spec(spec)?;
    let policy = build_policy(&config, &origin)?;
    Ok((config, origin, policy))
}

/// The configuration a `--policy` value names: a preset, else a policy file.
fn config_from_spec(spec: &str) -> Result<(PolicyConfig, PolicyOrigin), CliError> {
    if let Ok(p) = cupel_pipeline::preset(spec) {
        Ok((p.config, PolicyOrigin::Preset(p.name.to_string())))
    } else if Path::new(spec).is_file() {
        Ok((
            read_policy_file(spec)?,
            PolicyOrigin::File(spec.to_string()),
        ))
    } else {
        let names: Vec<&str> = cupel_pipeline::presets().iter().map(|p| p.name).collect();
        Err(
            CliError::input(format!("`{spec}` is neither a preset nor a policy file")).hint(
                format!(
                    "known presets: {}; or give the path of a policy file (.toml or .json)",
                    names.join(", ")
                ),
            ),
        )
    }
}

fn build_budget(b: BudgetInput, s: &RunSettings) -> Result<ContextBudget, CliError> {
    let max = s.max_tokens.or(b.max_tokens);
    let target = s.target_tokens.or(b.target_tokens);
    let (Some(max), Some(target)) = (max, target) else {
        let missing = match (max, target) {
            (None, None) => "max_tokens and target_tokens",
            (None, _) => "max_tokens",
            _ => "target_tokens",
        };
        return Err(
            CliError::input(format!("the budget has no {missing}")).hint(
                "set them in the input's [budget] table or with --max-tokens and --target-tokens",
            ),
        );
    };
    let mut builder = ContextBudget::builder(max, target)
        .reserved_slots(b.reserved_slots)
        .safety_margin_percent(b.estimation_safety_margin_percent.unwrap_or(0.0));
    if let Some(r) = s.output_reserve.or(b.output_reserve) {
        builder = builder.output_reserve(r);
    }
    builder.build().map_err(|e| {
        let msg = e.to_string();
        let msg = msg.strip_prefix("budget ").unwrap_or(&msg).to_string();
        CliError::input(format!("invalid budget: {msg}")).hint(
            "the budget is the input's [budget] table with --max-tokens, --target-tokens \
             and --output-reserve applied on top",
        )
    })
}

/// Turns parsed items into [`ContextItem`]s as they arrive, so no second
/// copy of all items is held.
struct ItemSink<'c> {
    name: String,
    counter: Option<(&'c dyn TokenCounter, &'c str)>,
    items: Vec<ContextItem>,
    /// Items seen so far (built or not).
    seen: usize,
    /// First item without `tokens`, and how many there are.
    missing: Option<(usize, usize)>,
}

impl<'c> ItemSink<'c> {
    fn new(name: &str, counter: Option<(&'c dyn TokenCounter, &'c str)>) -> Self {
        Self {
            name: name.to_string(),
            counter,
            items: Vec::new(),
            seen: 0,
            missing: None,
        }
    }

    /// The index the next item will have.
    fn next_index(&self) -> usize {
        self.seen
    }

    fn push(&mut self, it: InputItem) -> Result<(), CliError> {
        let i = self.seen;
        self.seen += 1;
        if it.tokens.is_none() {
            let (first, n) = self.missing.unwrap_or((i, 0));
            self.missing = Some((first, n + 1));
        }
        if self.counter.is_none() && self.missing.is_some() {
            // Failing (reported in `finish`): only count the rest.
            return Ok(());
        }
        let (name, counter) = (&self.name, self.counter);
        let item = it
            .map_tokens(|whose, content, tokens| match (tokens, counter) {
                (Some(t), _) => Ok(t),
                (None, Some((c, _))) => Ok(c.count_tokens(content)),
                (None, None) => {
                    let at = match whose {
                        TokensOf::Variant(k) => format!("items[{i}].variants[{k}]"),
                        _ => format!("items[{i}]"),
                    };
                    Err(
                        CliError::input(format!("{name}: {at}: `tokens` is missing")).hint(
                            "give each variant its `tokens`, or count them with --encoding ENCODING (e.g. o200k_base)",
                        ),
                    )
                }
            })?
            .into_item()
            .map_err(|e| CliError::input(format!("{}: items[{i}]: {e}", self.name)))?;
        self.items.push(item);
        Ok(())
    }

    fn finish(self) -> Result<(Vec<ContextItem>, Counted), CliError> {
        match (self.missing, self.counter) {
            (Some((first, n)), None) => {
                let more = match n - 1 {
                    0 => String::new(),
                    1 => " (and 1 more item)".to_string(),
                    n => format!(" (and {n} more items)"),
                };
                Err(CliError::input(format!(
                    "{}: items[{first}] has no `tokens`{more}",
                    self.name
                ))
                .hint("give every item a `tokens` count, or pass --encoding cl100k_base (or another encoding) to count them"))
            }
            (Some((_, n)), Some((_, enc))) => Ok((self.items, Some((enc.to_string(), n)))),
            (None, _) => Ok((self.items, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml(text: &str) -> Source {
        Source {
            name: "in.toml".into(),
            text: text.into(),
            format: Format::Toml,
        }
    }

    /// The field names of a derived `Debug` rendering `Name { a: .., b: .. }`,
    /// outermost struct only: an account of a struct's fields that does not
    /// come from serde.
    fn debug_fields(rendered: &str) -> Vec<String> {
        let Some(body) = rendered.find('{').map(|i| &rendered[i + 1..]) else {
            return Vec::new();
        };
        let (mut depth, mut quoted, mut start) = (0usize, false, 0usize);
        let mut fields = Vec::new();
        let bytes = body.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'"' if i == 0 || bytes[i - 1] != b'\\' => quoted = !quoted,
                _ if quoted => {}
                b'{' | b'[' | b'(' => depth += 1,
                b'}' | b']' | b')' if depth > 0 => depth -= 1,
                b':' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                    fields.push(body[start..i].trim().to_string());
                }
                b',' if depth == 0 => start = i + 1,
                _ => {}
            }
        }
        fields
    }

    /// The hint of the error for the unknown key at `path` (a TOML file).
    fn hint_for(text: &str) -> String {
        let e = prepare(&toml(text), &RunSettings::default(), None).unwrap_err();
        e.hint.unwrap_or_default()
    }

    #[test]
    fn unknown_key_hints_name_every_field_of_the_input_types() {
        let item: InputItem = toml::from_str("content = \"a\"").unwrap();
        let fields = debug_fields(&format!("{item:?}"));
        assert!(fields.iter().any(|f| f == "group"), "{fields:?}");
        let hint = hint_for("[[items]]\ncontent = \"a\"\npined = true\n");
        for f in &fields {
            assert!(hint.contains(f.as_str()), "`{f}` missing from {hint}");
        }

        let budget = BudgetInput::default();
        let fields = debug_fields(&format!("{budget:?}"));
        assert_eq!(fields.len(), 5, "{fields:?}");
        let hint = hint_for("[budget]\nmax_tokenz = 1\n");
        for f in &fields {
            assert!(hint.contains(f.as_str()), "`{f}` missing from {hint}");
        }

        let file = InputFile {
            budget: None,
            policy: None,
            items: None,
        };
        let fields = debug_fields(&format!("{file:?}"));
        assert_eq!(fields, ["budget", "policy", "items"]);
        let hint = hint_for("itemz = 1\n");
        for f in &fields {
            assert!(hint.contains(f.as_str()), "`{f}` missing from {hint}");
        }

        // Inside the policy table: the policy types' own fields.
        let hint = hint_for("[policy]\nslicr = \"greedy\"\n[[policy.scorers]]\ntype = \"kind\"\n");
        for f in ["slicer_params", "placer_params", "bucket_size"] {
            assert!(hint.contains(f), "`{f}` missing from {hint}");
        }
    }

    #[test]
    fn unknown_keys_are_named_with_their_path() {
        let e = prepare(
            &toml("[budget]\nmax_tokens = 10\ntarget_tokens = 5\n[[items]]\ncontent = \"a\"\ntokens = 1\npined = true\n"),
            &RunSettings::default(),
            None,
        )
        .unwrap_err();
        assert_eq!(e.message, "in.toml: unknown item key `items[0].pined`");
        let e = prepare(
            &toml("[policy]\nslicer = \"greedy\"\n[[policy.scorers]]\ntype = \"kind\"\nwieght = 2.0\n"),
            &RunSettings::default(),
            None,
        )
        .unwrap_err();
        assert_eq!(e.message, "in.toml: unknown policy key `scorers[0].wieght`");
    }

    #[test]
    fn flags_override_the_budget_before_it_is_validated() {
        // The file alone is invalid (target 50 > max 40); --max-tokens 100 fixes it.
        let src = toml("[budget]\nmax_tokens = 40\ntarget_tokens = 50\n");
        assert!(prepare(&src, &RunSettings::default(), None).is_err());
        let s = RunSettings {
            max_tokens: Some(100),
            output_reserve: Some(10),
            ..Default::default()
        };
        let p = prepare(&src, &s, None).unwrap();
        assert_eq!(
            (
                p.budget.max_tokens(),
                p.budget.target_tokens(),
                p.budget.output_reserve()
            ),
            (100, 50, 10)
        );
        assert_eq!(p.origin, PolicyOrigin::DefaultPreset);
    }

    #[test]
    fn missing_tokens_name_the_first_item_and_count_the_rest() {
        let src = toml(
            "[budget]\nmax_tokens = 10\ntarget_tokens = 5\n\
             [[items]]\ncontent = \"a\"\ntokens = 1\n\
             [[items]]\ncontent = \"b\"\n\
             [[items]]\ncontent = \"c\"\n",
        );
        let e = prepare(&src, &RunSettings::default(), None).unwrap_err();
        assert_eq!(
            e.message,
            "in.toml: items[1] has no `tokens` (and 1 more item)"
        );
    }

    struct Fixed;
    impl TokenCounter for Fixed {
        fn count_tokens(&self, text: &str) -> i64 {
            i64::try_from(text.len()).unwrap() * 10
        }
    }

    #[test]
    fn a_counter_fills_only_missing_counts() {
        let src = toml(
            "[budget]\nmax_tokens = 100\ntarget_tokens = 50\n\
             [[items]]\ncontent = \"a\"\ntokens = 1\n\
             [[items]]\ncontent = \"bc\"\n",
        );
        let p = prepare(&src, &RunSettings::default(), Some((&Fixed, "fixed"))).unwrap();
        // explicit 1 kept; "bc" counted as 2 bytes * 10 = 20
        let tokens: Vec<i64> = p.items.iter().map(ContextItem::tokens).collect();
        assert_eq!(tokens, [1, 20]);
        assert_eq!(p.counted, Some(("fixed".to_string(), 1)));
    }
}
