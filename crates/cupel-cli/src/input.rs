//! Reading INPUT files (`[budget]`, `[policy]`, `[[items]]`) and policy files.
//!
//! Parsing is strict: every key the CLI does not know is an error naming the
//! key (`items[3].pined`, `policy.scorers[0].wieght`), because a silently
//! ignored typo would change the selection without a trace. Syntax and type
//! errors carry `file:line:column`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use chrono::{DateTime, Utc};
use cupel_core::{
    ContextBudget, ContextItem, ContextKind, ContextSource, CupelError, TokenCounter,
};
use cupel_pipeline::{Policy, PolicyConfig};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::CliError;

/// The two input syntaxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// TOML 1.1 (native datetimes allowed for `timestamp`).
    Toml,
    /// JSON.
    Json,
}

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
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::input(format!("cannot read the {what} from stdin: {e}")))?;
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
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::input(format!("cannot read {what} `{path}`: {e}")))?;
        Ok(Self {
            name: path.to_string(),
            text,
            format,
        })
    }

    /// Parses the text as `T`, rejecting unknown keys.
    ///
    /// `unknown` turns the path of the first unknown key into the error.
    pub(crate) fn parse_strict<T: DeserializeOwned>(
        &self,
        unknown: impl Fn(&[Seg]) -> CliError,
    ) -> Result<T, CliError> {
        self.parse(unknown, false)
    }

    /// As [`parse_strict`](Self::parse_strict), and a type error also names
    /// the key path of the value (`gate.compact_code.rules[0].threshold`).
    /// An unknown key that a type rejects itself (`deny_unknown_fields`)
    /// goes through `unknown` too, so it reads like one found by this reader.
    pub(crate) fn parse_strict_with_paths<T: DeserializeOwned>(
        &self,
        unknown: impl Fn(&[Seg]) -> CliError,
    ) -> Result<T, CliError> {
        self.parse(unknown, true)
    }

    fn parse<T: DeserializeOwned>(
        &self,
        unknown: impl Fn(&[Seg]) -> CliError,
        paths: bool,
    ) -> Result<T, CliError> {
        let mut ignored: Vec<Vec<Seg>> = Vec::new();
        let mut track = serde_path_to_error::Track::new();
        let result = match self.format {
            Format::Toml => {
                let de = toml::de::Deserializer::parse(&self.text)
                    .map_err(|e| self.toml_error(&e, true, None))?;
                let de = serde_path_to_error::Deserializer::new(de, &mut track);
                serde_ignored::deserialize(de, |p| ignored.push(segments(&p)))
                    .map_err(DataError::Toml)
            }
            Format::Json => {
                let mut de = serde_json::Deserializer::from_str(&self.text);
                let tracked = serde_path_to_error::Deserializer::new(&mut de, &mut track);
                let v = serde_ignored::deserialize(tracked, |p| ignored.push(segments(&p)))
                    .map_err(DataError::Json);
                if v.is_ok() {
                    de.end().map_err(|e| self.json_error(&e, None))?;
                }
                v
            }
        };
        let value = match result {
            Ok(v) => v,
            Err(e) => {
                let path = if paths {
                    tracked_segments(&track.path())
                } else {
                    Vec::new()
                };
                let path = (!path.is_empty()).then_some(path);
                if let Some(path) = &path
                    && e.message().starts_with("unknown field `")
                {
                    let mut u = unknown(path);
                    u.message = format!("{}: {}", self.name, u.message);
                    return Err(u);
                }
                let path = path.as_deref().map(render_path);
                return Err(match e {
                    DataError::Toml(e) => self.toml_error(&e, false, path.as_deref()),
                    DataError::Json(e) => self.json_error(&e, path.as_deref()),
                });
            }
        };
        match ignored.first() {
            Some(path) => {
                let mut e = unknown(path);
                e.message = format!("{}: {}", self.name, e.message);
                Err(e)
            }
            None => Ok(value),
        }
    }

    fn toml_error(&self, e: &toml::de::Error, syntax: bool, path: Option<&str>) -> CliError {
        let msg = one_line(e.message());
        let what = if syntax { "invalid TOML: " } else { "" };
        let at = e
            .span()
            .map(|s| {
                let (line, col) = line_col(&self.text, s.start);
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

/// A data error from either parser, kept until its key path is known.
enum DataError {
    Toml(toml::de::Error),
    Json(serde_json::Error),
}

impl DataError {
    /// The parser's message, without position.
    fn message(&self) -> String {
        match self {
            DataError::Toml(e) => e.message().to_string(),
            DataError::Json(e) => json_message(e),
        }
    }
}

/// serde_json's message without its ` at line L column C` suffix.
fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&suffix).unwrap_or(&full).to_string()
}

fn format_from_extension(path: &str) -> Option<Format> {
    let ext = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "toml" => Some(Format::Toml),
        "json" => Some(Format::Json),
        _ => None,
    }
}

/// Joins a possibly multi-line parser message into one line.
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

fn segments(p: &serde_ignored::Path<'_>) -> Vec<Seg> {
    use serde_ignored::Path as P;
    let mut out = match p {
        P::Root => return Vec::new(),
        P::Seq { parent, .. }
        | P::Map { parent, .. }
        | P::Some { parent }
        | P::NewtypeStruct { parent }
        | P::NewtypeVariant { parent } => segments(parent),
    };
    match p {
        P::Seq { index, .. } => out.push(Seg::Index(*index)),
        P::Map { key, .. } => out.push(Seg::Key(key.clone())),
        _ => {}
    }
    out
}

/// serde_path_to_error's path as key-path segments (`?` steps dropped).
fn tracked_segments(p: &serde_path_to_error::Path) -> Vec<Seg> {
    use serde_path_to_error::Segment;
    p.iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(Seg::Index(*index)),
            Segment::Map { key } => Some(Seg::Key(key.clone())),
            Segment::Enum { variant } => Some(Seg::Key(variant.clone())),
            Segment::Unknown => None,
        })
        .collect()
}

/// `items[3].pined`, `scorers[0].wieght`.
pub(crate) fn render_path(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

const TOP_KEYS: &str = "budget, policy, items";
const BUDGET_KEYS: &str = "max_tokens, target_tokens, output_reserve, reserved_slots, \
                           estimation_safety_margin_percent";
const ITEM_KEYS: &str = "content, tokens, kind, source, priority, tags, metadata, timestamp, \
                         future_relevance_hint, pinned, original_tokens";
const POLICY_KEYS: &str = "scorers, slicer, placer, deduplication, overflow_strategy, \
                           bucket_size, max_table_cells, inner_slicer, quotas, entries, \
                           scarcity_behavior";

const SCORER_KEYS: &str = "type, weight, and per type: weights, use_default_weights (kind); \
                           tag_weights, case_insensitive_tags (tag); children (composite); \
                           inner_scorer (scaled); curve, reference_time, \
                           null_timestamp_score (decay); default_score (metadata_trust); \
                           key, value, boost (metadata_key)";

/// The error for an unknown key inside a policy (`path` relative to the policy table).
fn unknown_policy_key(path: &[Seg]) -> CliError {
    let e = CliError::input(format!("unknown policy key `{}`", render_path(path)));
    match path {
        [_] => e.hint(format!("policy keys are: {POLICY_KEYS}")),
        [Seg::Key(s), Seg::Index(_), _] if s == "scorers" => {
            e.hint(format!("scorer keys are: {SCORER_KEYS}"))
        }
        _ => e,
    }
}

/// The error for an unknown key in an INPUT file.
fn unknown_input_key(path: &[Seg]) -> CliError {
    match path {
        [Seg::Key(p), rest @ ..] if p == "policy" && !rest.is_empty() => unknown_policy_key(rest),
        [Seg::Key(b), _] if b == "budget" => {
            CliError::input(format!("unknown key `{}`", render_path(path)))
                .hint(format!("budget keys are: {BUDGET_KEYS}"))
        }
        [Seg::Key(i), Seg::Index(_), Seg::Key(k)]
            if i == "items" && k.to_ascii_lowercase().contains("group") =>
        {
            CliError::input(format!("unknown item key `{}`", render_path(path)))
                .hint("an item's atomic group is set with `group = \"<id>\"` (a string)")
        }
        [Seg::Key(i), Seg::Index(_), _] if i == "items" => {
            CliError::input(format!("unknown item key `{}`", render_path(path)))
                .hint(format!("item keys are: {ITEM_KEYS}"))
        }
        [_] => CliError::input(format!("unknown top-level key `{}`", render_path(path)))
            .hint(format!("top-level keys are: {TOP_KEYS}")),
        _ => CliError::input(format!("unknown key `{}`", render_path(path))),
    }
}

/// An INPUT file as written.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a table with [budget], [policy] and [[items]]")]
struct InputFile {
    #[serde(default)]
    budget: Option<BudgetInput>,
    #[serde(default)]
    policy: Option<PolicyConfig>,
    #[serde(default)]
    items: Vec<InputItem>,
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
    #[serde(default, alias = "reservedSlots")]
    reserved_slots: BTreeMap<ContextKind, i64>,
    #[serde(default, alias = "estimationSafetyMarginPercent")]
    estimation_safety_margin_percent: Option<f64>,
}

/// One `[[items]]` entry: [`ContextItem`]'s wire schema with `tokens` optional
/// (it may be counted with `--count-tokens`).
#[derive(Debug, Deserialize)]
#[serde(expecting = "an item table with `content`")]
struct InputItem {
    content: String,
    #[serde(default)]
    tokens: Option<i64>,
    #[serde(default)]
    kind: Option<ContextKind>,
    #[serde(default)]
    source: Option<ContextSource>,
    #[serde(default)]
    priority: Option<i64>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default, with = "cupel_core::serde_timestamp::option")]
    timestamp: Option<DateTime<Utc>>,
    #[serde(default, alias = "futureRelevanceHint")]
    future_relevance_hint: Option<f64>,
    #[serde(default)]
    pinned: bool,
    #[serde(default, alias = "originalTokens")]
    original_tokens: Option<i64>,
    /// Atomic group id (extension): items sharing it are kept, dropped and
    /// placed together.
    #[serde(default)]
    group: Option<String>,
}

/// The command-line settings that shape a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunSettings {
    /// `--policy FILE`.
    pub(crate) policy_file: Option<String>,
    /// `--preset NAME`.
    pub(crate) preset: Option<String>,
    /// `--max-tokens`.
    pub(crate) max_tokens: Option<i64>,
    /// `--target-tokens`.
    pub(crate) target_tokens: Option<i64>,
    /// `--output-reserve`.
    pub(crate) output_reserve: Option<i64>,
}

/// Where the policy of a run came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PolicyOrigin {
    /// `--policy FILE`.
    File(String),
    /// `--preset NAME` (the canonical name).
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
    let cfg: PolicyConfig = src.parse_strict(unknown_policy_key)?;
    cfg.check_keys()
        .map_err(|e| CliError::input(format!("{path}: invalid policy: {}", config_message(&e))))?;
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
    let file: InputFile = src.parse_strict(unknown_input_key)?;

    // Policy: --policy > --preset > [policy] > the chat preset.
    let (config, origin) = if let Some(path) = &settings.policy_file {
        (read_policy_file(path)?, PolicyOrigin::File(path.clone()))
    } else if let Some(name) = &settings.preset {
        let p = lookup_preset(name)?;
        (p.config, PolicyOrigin::Preset(p.name.to_string()))
    } else if let Some(cfg) = file.policy {
        cfg.check_keys().map_err(|e| {
            CliError::input(format!(
                "{}: invalid [policy]: {}",
                src.name,
                config_message(&e)
            ))
        })?;
        (cfg, PolicyOrigin::Table(src.name.clone()))
    } else {
        (lookup_preset("chat")?.config, PolicyOrigin::DefaultPreset)
    };
    let policy = build_policy(&config, &origin)?;

    let budget = build_budget(file.budget.unwrap_or_default(), settings)?;
    let (items, counted) = build_items(src, file.items, counter)?;
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
    let (config, origin) = if let Ok(p) = cupel_pipeline::preset(spec) {
        (p.config, PolicyOrigin::Preset(p.name.to_string()))
    } else if Path::new(spec).is_file() {
        (
            read_policy_file(spec)?,
            PolicyOrigin::File(spec.to_string()),
        )
    } else {
        let names: Vec<&str> = cupel_pipeline::presets().iter().map(|p| p.name).collect();
        return Err(
            CliError::input(format!("`{spec}` is neither a preset nor a policy file")).hint(
                format!(
                    "known presets: {}; or give the path of a policy file (.toml or .json)",
                    names.join(", ")
                ),
            ),
        );
    };
    let policy = build_policy(&config, &origin)?;
    Ok((config, origin, policy))
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

fn build_items(
    src: &Source,
    raw: Vec<InputItem>,
    counter: Option<(&dyn TokenCounter, &str)>,
) -> Result<(Vec<ContextItem>, Counted), CliError> {
    let missing: Vec<usize> = raw
        .iter()
        .enumerate()
        .filter(|(_, it)| it.tokens.is_none())
        .map(|(i, _)| i)
        .collect();
    if counter.is_none()
        && let Some(&first) = missing.first()
    {
        let more = match missing.len() - 1 {
            0 => String::new(),
            1 => " (and 1 more item)".to_string(),
            n => format!(" (and {n} more items)"),
        };
        return Err(CliError::input(format!(
            "{}: items[{first}] has no `tokens`{more}",
            src.name
        ))
        .hint("give every item a `tokens` count, or pass --count-tokens cl100k_base (or another encoding) to count them"));
    }
    let mut items = Vec::with_capacity(raw.len());
    for (i, it) in raw.into_iter().enumerate() {
        let tokens = match (it.tokens, counter) {
            (Some(t), _) => t,
            (None, Some((c, _))) => c.count_tokens(&it.content),
            // Unreachable: checked above; kept total rather than panicking.
            (None, None) => 0,
        };
        let item = ContextItem::builder(it.content, tokens)
            .kind(it.kind.unwrap_or_default())
            .source(it.source.unwrap_or_default())
            .priority_opt(it.priority)
            .tags(it.tags)
            .metadata_map(it.metadata)
            .timestamp_opt(it.timestamp)
            .future_relevance_hint_opt(it.future_relevance_hint)
            .pinned(it.pinned)
            .original_tokens_opt(it.original_tokens)
            .group_opt(it.group)
            .build()
            .map_err(|e| CliError::input(format!("{}: items[{i}]: {e}", src.name)))?;
        items.push(item);
    }
    let counted = counter
        .filter(|_| !missing.is_empty())
        .map(|(_, name)| (name.to_string(), missing.len()));
    Ok((items, counted))
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

    #[test]
    fn line_col_counts_characters() {
        // "ab\ncd": byte 4 is 'd' on line 2, column 2.
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        // "é" is 2 bytes: byte 3 is 'x', the 2nd character of line 1.
        assert_eq!(line_col("éx", 2), (1, 2));
        assert_eq!(line_col("", 10), (1, 1));
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
