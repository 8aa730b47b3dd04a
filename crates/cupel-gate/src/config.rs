//! The gate's configuration: the wire shape ([`GateSpec`]), the validated
//! [`GateConfig`] and its [`CompactionRule`]s, and [`GateConfigError`].

use std::fmt;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use cupel_core::CupelError;
#[cfg(feature = "config")]
use cupel_core::strict::{self, KeyPath, Located, line_col, one_line};

use crate::{CodeLanguage, CompactionPolicyKind};

/// When a rule compacts the nodes of its language.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CompactionPolicy {
    /// Every node of the language is compacted before the budget is checked.
    Always,
    /// A node is compacted only if appending it *raw* would take the context
    /// above `threshold × max_context_tokens` (see
    /// [`GateConfig::trigger_tokens`]); `threshold` is in `(0, 1]`.
    Threshold {
        /// The fraction of `max_context_tokens` at which compaction starts.
        threshold: f64,
    },
    /// A node is compacted only if a consumed inbox message addressed to the
    /// gate carries `inbox_key` as its topic.
    Demand {
        /// The topic that asks for compaction.
        inbox_key: String,
    },
}

impl CompactionPolicy {
    /// The policy's name without its parameter.
    pub fn kind(&self) -> CompactionPolicyKind {
        match self {
            CompactionPolicy::Always => CompactionPolicyKind::Always,
            CompactionPolicy::Threshold { .. } => CompactionPolicyKind::Threshold,
            CompactionPolicy::Demand { .. } => CompactionPolicyKind::Demand,
        }
    }
}

/// One compaction rule: a language and the policy for its nodes.
///
/// The first rule whose `language` matches a node decides for that node; later
/// rules for the same language are never consulted for it.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionRule {
    /// [`CodeLanguage::Sql`] or [`CodeLanguage::Dotnet`] (a rule for
    /// `Unknown` is rejected: no node is compacted as "unknown").
    pub language: CodeLanguage,
    /// When to compact.
    pub policy: CompactionPolicy,
}

impl CompactionRule {
    /// `policy = "always"` for `language`.
    pub fn always(language: CodeLanguage) -> Self {
        Self {
            language,
            policy: CompactionPolicy::Always,
        }
    }

    /// `policy = "threshold"` with `threshold` for `language`.
    pub fn threshold(language: CodeLanguage, threshold: f64) -> Self {
        Self {
            language,
            policy: CompactionPolicy::Threshold { threshold },
        }
    }

    /// `policy = "demand"` with `inbox_key` for `language`.
    pub fn demand(language: CodeLanguage, inbox_key: impl Into<String>) -> Self {
        Self {
            language,
            policy: CompactionPolicy::Demand {
                inbox_key: inbox_key.into(),
            },
        }
    }

    fn to_spec(&self) -> RuleSpec {
        let (threshold, inbox_key) = match &self.policy {
            CompactionPolicy::Always => (None, None),
            CompactionPolicy::Threshold { threshold } => (Some(*threshold), None),
            CompactionPolicy::Demand { inbox_key } => (None, Some(inbox_key.clone())),
        };
        RuleSpec {
            language: Some(self.language.as_str().to_string()),
            policy: Some(self.policy.kind().as_str().to_string()),
            threshold,
            inbox_key,
        }
    }
}

/// A validated gate configuration.
///
/// Build one with [`GateConfig::builder`], or read one with
/// [`GateConfig::from_toml_str`] / [`GateConfig::from_json_str`] or from a
/// [`GateSpec`]. Every reader is strict: an unknown key is an error, also when
/// a `GateConfig` (or a [`GateSpec`]) is deserialised with plain serde inside
/// an embedder's own file type, and a `GateConfig` deserialised that way is
/// validated too. The two `from_*_str` readers add the key path and the line
/// and column to every error.
///
/// ```
/// use cupel_gate::CodeLanguage;
/// use cupel_gate::{CompactionPolicy, GateConfig};
///
/// let cfg = GateConfig::from_toml_str(r#"
///     id = "manage_budget"
///     max_context_tokens = 5000
///     divide_new_content = "<<<New content"
///
///     [[compact_code.rules]]
///     language = "sql"
///     policy = "threshold"
///     threshold = 0.4
/// "#)?;
/// assert_eq!(cfg.rules()[0].language, CodeLanguage::Sql);
/// assert_eq!(cfg.rules()[0].policy, CompactionPolicy::Threshold { threshold: 0.4 });
/// // 0.4 × 5000 = 2000 tokens: the compaction trigger.
/// assert_eq!(cfg.trigger_tokens(0.4), 2000);
/// # Ok::<(), cupel_gate::GateConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "GateSpec", into = "GateSpec")]
pub struct GateConfig {
    id: String,
    max_context_tokens: i64,
    encoding: Option<String>,
    divide_new_content: Option<String>,
    rules: Vec<CompactionRule>,
}

impl GateConfig {
    /// Starts a configuration for the gate `id` with the global budget
    /// `max_context_tokens`.
    pub fn builder(id: impl Into<String>, max_context_tokens: i64) -> GateConfigBuilder {
        GateConfigBuilder {
            spec: GateSpec {
                id: Some(id.into()),
                max_context_tokens: Some(max_context_tokens),
                ..GateSpec::default()
            },
        }
    }

    /// Parses the gate table from TOML, rejecting unknown keys.
    ///
    /// # Errors
    /// [`GateConfigError::Parse`] (syntax, with line and column),
    /// [`GateConfigError::InvalidType`] (a value of the wrong type, with its
    /// key path, line and column), [`GateConfigError::UnknownKey`], or a
    /// validation error naming the key.
    #[cfg(feature = "config")]
    #[cfg_attr(docsrs, doc(cfg(feature = "config")))]
    pub fn from_toml_str(s: &str) -> Result<Self, GateConfigError> {
        let de = toml::de::Deserializer::parse(s).map_err(|e| GateConfigError::Parse {
            message: format!("invalid TOML: {}", e.to_string().trim_end()),
        })?;
        let spec: GateSpec = strict::deserialize(de).map_err(|e| {
            gate_error(
                &e.into_config_error("gate", GateSpec::expected_keys, |e| Located {
                    message: one_line(e.message()),
                    at: e.span().map(|span| line_col(s, span.start)),
                    syntax: false,
                }),
            )
        })?;
        spec.build()
    }

    /// Parses the gate table from JSON, rejecting unknown keys.
    ///
    /// # Errors
    /// As [`from_toml_str`](Self::from_toml_str).
    #[cfg(feature = "config")]
    #[cfg_attr(docsrs, doc(cfg(feature = "config")))]
    pub fn from_json_str(s: &str) -> Result<Self, GateConfigError> {
        let mut de = serde_json::Deserializer::from_str(s);
        let spec: GateSpec = strict::deserialize(&mut de).map_err(|e| {
            gate_error(&e.into_config_error("gate", GateSpec::expected_keys, |e| {
                let full = e.to_string();
                Located {
                    message: strict::without_position(&full, e.line(), e.column()).to_owned(),
                    at: (e.line() > 0).then(|| (e.line(), e.column())),
                    syntax: e.is_syntax() || e.is_eof(),
                }
            }))
        })?;
        de.end().map_err(|e| GateConfigError::Parse {
            message: format!("invalid JSON: {e}"),
        })?;
        spec.build()
    }

    /// The gate's own id: demand messages must be addressed to it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The global context budget, in tokens (always > 0).
    pub fn max_context_tokens(&self) -> i64 {
        self.max_context_tokens
    }

    /// The tokenizer the configuration names, if any. The gate does not use
    /// it (it is handed a counter); tools that build the counter from a file,
    /// such as `cupel gate`, do.
    pub fn encoding(&self) -> Option<&str> {
        self.encoding.as_deref()
    }

    /// The divider inserted once before each admitted batch, if any.
    pub fn divide_new_content(&self) -> Option<&str> {
        self.divide_new_content.as_deref()
    }

    /// The compaction rules, in the order they are tried.
    pub fn rules(&self) -> &[CompactionRule] {
        &self.rules
    }

    /// The first rule for `language`, if any (first match wins).
    pub fn rule_for(&self, language: CodeLanguage) -> Option<&CompactionRule> {
        self.rules.iter().find(|r| r.language == language)
    }

    /// The token count at which a `threshold` rule starts compacting:
    /// `threshold × max_context_tokens`, rounded down to whole tokens.
    ///
    /// A product within `1e-9` (relative) of a whole number is taken as that
    /// number, so that decimal fractions which binary floating point cannot
    /// represent exactly (`0.4 × 5000`, `0.7 × 10`) give the trigger a person
    /// would compute. A node is compacted when the context *with the raw node*
    /// would be strictly above the trigger; exactly at it, it is not.
    pub fn trigger_tokens(&self, threshold: f64) -> i64 {
        // max_context_tokens fits an f64 closely enough for a trigger: a budget
        // beyond 2^53 tokens is not a real budget.
        #[allow(clippy::cast_precision_loss)]
        let product = threshold * self.max_context_tokens as f64;
        let nearest = product.round();
        let value = if (product - nearest).abs() <= 1e-9 * nearest.abs().max(1.0) {
            nearest
        } else {
            product.floor()
        };
        // Saturating float-to-int cast; threshold ≤ 1 keeps it ≤ max_context_tokens.
        #[allow(clippy::cast_possible_truncation)]
        let trigger = value as i64;
        trigger.clamp(0, self.max_context_tokens)
    }

    /// The demand topics of every `demand` rule, in rule order, without repeats.
    pub fn demand_topics(&self) -> Vec<&str> {
        let mut topics: Vec<&str> = Vec::new();
        for r in &self.rules {
            if let CompactionPolicy::Demand { inbox_key } = &r.policy
                && !topics.contains(&inbox_key.as_str())
            {
                topics.push(inbox_key);
            }
        }
        topics
    }
}

/// Builds a [`GateConfig`], validating everything in [`build`](Self::build).
#[derive(Debug, Clone)]
pub struct GateConfigBuilder {
    spec: GateSpec,
}

impl GateConfigBuilder {
    /// The tokenizer name to record (see [`GateConfig::encoding`]).
    pub fn encoding(mut self, encoding: impl Into<String>) -> Self {
        self.spec.encoding = Some(encoding.into());
        self
    }

    /// The divider inserted before each admitted batch.
    pub fn divide_new_content(mut self, divider: impl Into<String>) -> Self {
        self.spec.divide_new_content = Some(divider.into());
        self
    }

    /// Appends a compaction rule (tried after the ones already added).
    pub fn rule(mut self, rule: CompactionRule) -> Self {
        self.spec
            .compact_code
            .get_or_insert_with(CompactCodeSpec::default)
            .rules
            .push(rule.to_spec());
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    /// The first [`GateConfigError`] found (see [`GateSpec::build`]).
    pub fn build(&self) -> Result<GateConfig, GateConfigError> {
        self.spec.build()
    }
}

/// The gate table as written in a file: every key optional, languages and
/// policies as plain strings, so that [`build`](GateSpec::build) can report
/// every mistake with its key path (and a rule's index). Unknown keys are
/// rejected even by plain serde (`deny_unknown_fields`, here and in
/// [`CompactCodeSpec`] and [`RuleSpec`]); [`GateConfig::from_toml_str`] and
/// the command-line tool read through `cupel_core::strict`, which reports
/// them as [`GateConfigError::UnknownKey`] with the keys the table accepts.
///
/// ```toml
/// id = "manage_budget"                  # required
/// max_context_tokens = 5000             # required, > 0
/// encoding = "cl100k_base"              # optional
/// divide_new_content = "<<<New content" # optional
///
/// [[compact_code.rules]]                # optional; first matching language wins
/// language = "sql"                      # sql | dotnet
/// policy = "demand"                     # always | threshold | demand
/// inbox_key = "compact_sql"             # demand only (required there)
/// # threshold = 0.4                     # threshold only (required there), in (0, 1]
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a gate table (id, max_context_tokens, encoding, divide_new_content, compact_code)"
)]
pub struct GateSpec {
    /// The gate's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The global context budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context_tokens: Option<i64>,
    /// A tokenizer name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// The batch divider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divide_new_content: Option<String>,
    /// The compaction rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_code: Option<CompactCodeSpec>,
}

/// `compact_code`: holds the rule list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a compact_code table with `rules`")]
pub struct CompactCodeSpec {
    /// The rules; must be a list.
    #[serde(deserialize_with = "rule_list")]
    pub rules: Vec<RuleSpec>,
}

/// One rule as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a rule table (language, policy, threshold, inbox_key)"
)]
pub struct RuleSpec {
    /// `sql` or `dotnet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// `always`, `threshold` or `demand`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// For `threshold`: the fraction in `(0, 1]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// For `demand`: the topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbox_key: Option<String>,
}

/// `rules` must be a list: anything else gets a message that says so.
fn rule_list<'de, D: Deserializer<'de>>(de: D) -> Result<Vec<RuleSpec>, D::Error> {
    struct ListVisitor;
    impl<'de> Visitor<'de> for ListVisitor {
        type Value = Vec<RuleSpec>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("`compact_code.rules` to be a list of rule tables")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(rule) = seq.next_element::<RuleSpec>()? {
                out.push(rule);
            }
            Ok(out)
        }
    }
    de.deserialize_seq(ListVisitor)
}

impl GateSpec {
    /// Validates the spec into a [`GateConfig`]; key paths in errors are
    /// relative to the gate table (`compact_code.rules[1].threshold`).
    ///
    /// # Errors
    /// The first [`GateConfigError`] found, checking `id`, then
    /// `max_context_tokens`, then each rule in order.
    pub fn build(&self) -> Result<GateConfig, GateConfigError> {
        self.build_at("")
    }

    /// As [`build`](Self::build), with `prefix` (e.g. `"gate."`) in front of
    /// every key path.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_at(&self, prefix: &str) -> Result<GateConfig, GateConfigError> {
        let id = match self.id.as_deref() {
            None => {
                return Err(GateConfigError::MissingKey {
                    path: format!("{prefix}id"),
                    what: "the gate's own id (demand messages are addressed to it)",
                });
            }
            Some(s) if s.trim().is_empty() => {
                return Err(GateConfigError::EmptyValue {
                    path: format!("{prefix}id"),
                });
            }
            Some(s) => s.to_string(),
        };
        let max_context_tokens = match self.max_context_tokens {
            None => {
                return Err(GateConfigError::MissingKey {
                    path: format!("{prefix}max_context_tokens"),
                    what: "the global context budget, in tokens",
                });
            }
            Some(v) if v <= 0 => {
                return Err(GateConfigError::InvalidMaxContextTokens {
                    path: format!("{prefix}max_context_tokens"),
                    value: v,
                });
            }
            Some(v) => v,
        };
        // Clarification G-24: a divider that is empty or only blanks would
        // append a block with nothing to read to every batch; it is refused.
        if self
            .divide_new_content
            .as_deref()
            .is_some_and(|d| d.trim().is_empty())
        {
            return Err(GateConfigError::EmptyValue {
                path: format!("{prefix}divide_new_content"),
            });
        }
        let rules = match &self.compact_code {
            None => Vec::new(),
            Some(cc) => cc
                .rules
                .iter()
                .enumerate()
                .map(|(i, r)| r.build(i, &format!("{prefix}compact_code.rules[{i}]")))
                .collect::<Result<_, _>>()?,
        };
        Ok(GateConfig {
            id,
            max_context_tokens,
            encoding: self.encoding.clone(),
            divide_new_content: self.divide_new_content.clone(),
            rules,
        })
    }
}

impl RuleSpec {
    fn build(&self, rule: usize, at: &str) -> Result<CompactionRule, GateConfigError> {
        let language = match self.language.as_deref() {
            None => {
                return Err(GateConfigError::MissingKey {
                    path: format!("{at}.language"),
                    what: "the rule's language (sql or dotnet)",
                });
            }
            Some(name) => match language_name(name) {
                Some(language) => language,
                None => {
                    return Err(GateConfigError::UnknownLanguage {
                        path: format!("{at}.language"),
                        rule,
                        value: name.to_string(),
                    });
                }
            },
        };
        let policy = match self.policy.as_deref() {
            None => {
                return Err(GateConfigError::MissingKey {
                    path: format!("{at}.policy"),
                    what: "the rule's policy (always, threshold or demand)",
                });
            }
            Some(name) if name.trim().eq_ignore_ascii_case("always") => {
                CompactionPolicyKind::Always
            }
            Some(name) if name.trim().eq_ignore_ascii_case("threshold") => {
                CompactionPolicyKind::Threshold
            }
            Some(name) if name.trim().eq_ignore_ascii_case("demand") => {
                CompactionPolicyKind::Demand
            }
            Some(other) => {
                return Err(GateConfigError::UnknownPolicy {
                    path: format!("{at}.policy"),
                    rule,
                    value: other.to_string(),
                });
            }
        };
        // A key that belongs to another policy is a mistake, not something to ignore.
        let misplaced = |key: &'static str| GateConfigError::KeyNotForPolicy {
            path: format!("{at}.{key}"),
            rule,
            key,
            policy,
        };
        if self.threshold.is_some() && policy != CompactionPolicyKind::Threshold {
            return Err(misplaced("threshold"));
        }
        if self.inbox_key.is_some() && policy != CompactionPolicyKind::Demand {
            return Err(misplaced("inbox_key"));
        }
        // (`CompactionPolicyKind` is non-exhaustive, hence `if`s, not a `match`.)
        let policy = if policy == CompactionPolicyKind::Threshold {
            match self.threshold {
                None => {
                    return Err(GateConfigError::ThresholdMissing {
                        path: format!("{at}.threshold"),
                        rule,
                    });
                }
                // `!(t > 0.0)` also rejects NaN.
                Some(t) if !(t > 0.0 && t <= 1.0) => {
                    return Err(GateConfigError::ThresholdOutOfRange {
                        path: format!("{at}.threshold"),
                        rule,
                        value: t,
                    });
                }
                Some(threshold) => CompactionPolicy::Threshold { threshold },
            }
        } else if policy == CompactionPolicyKind::Demand {
            match self.inbox_key.as_deref() {
                None => {
                    return Err(GateConfigError::InboxKeyMissing {
                        path: format!("{at}.inbox_key"),
                        rule,
                    });
                }
                Some(k) if k.trim().is_empty() => {
                    return Err(GateConfigError::EmptyValue {
                        path: format!("{at}.inbox_key"),
                    });
                }
                Some(k) => CompactionPolicy::Demand {
                    inbox_key: k.to_string(),
                },
            }
        } else {
            CompactionPolicy::Always
        };
        Ok(CompactionRule { language, policy })
    }
}

/// A rule's language name, read as the original gate read it: case does not
/// matter, surrounding blanks are ignored, and `csharp` / `c#` name `dotnet`.
/// `unknown` is not a rule language (no rule can match it).
fn language_name(name: &str) -> Option<CodeLanguage> {
    let n = name.trim().to_ascii_lowercase();
    match n.as_str() {
        "sql" => Some(CodeLanguage::Sql),
        "dotnet" | "csharp" | "c#" => Some(CodeLanguage::Dotnet),
        _ => None,
    }
}

impl TryFrom<GateSpec> for GateConfig {
    type Error = GateConfigError;
    fn try_from(spec: GateSpec) -> Result<Self, Self::Error> {
        spec.build()
    }
}

impl From<GateConfig> for GateSpec {
    fn from(c: GateConfig) -> Self {
        GateSpec {
            id: Some(c.id),
            max_context_tokens: Some(c.max_context_tokens),
            encoding: c.encoding,
            divide_new_content: c.divide_new_content,
            compact_code: (!c.rules.is_empty()).then(|| CompactCodeSpec {
                rules: c.rules.iter().map(CompactionRule::to_spec).collect(),
            }),
        }
    }
}

#[cfg(feature = "config")]
/// The error for a value serde rejected at `path`, with the 1-based line
/// and column where the parser knows them.
fn located(path: &KeyPath, message: &str, at: Option<(usize, usize)>) -> GateConfigError {
    let message = one_line(message);
    if path.is_empty() {
        let at = at.map_or_else(String::new, |(l, c)| format!(" (line {l}, column {c})"));
        return GateConfigError::Parse {
            message: format!("{message}{at}"),
        };
    }
    GateConfigError::InvalidType {
        path: path.to_string(),
        message,
        line: at.map(|(l, _)| l),
        column: at.map(|(_, c)| c),
    }
}

/// The gate's error for a strict read's failure (see
/// [`StrictError::into_config_error`](cupel_core::strict::StrictError::into_config_error)).
#[cfg(feature = "config")]
fn gate_error(e: &cupel_core::ConfigError) -> GateConfigError {
    use cupel_core::ConfigErrorKind;
    let path = KeyPath::parse(e.key_path().unwrap_or_default());
    let at = e.line().zip(e.column());
    match e.kind() {
        ConfigErrorKind::UnknownKey => GateConfigError::UnknownKey {
            path: path.to_string(),
            expected: GateSpec::expected_keys(&path),
        },
        ConfigErrorKind::Syntax => GateConfigError::Parse {
            message: match std::error::Error::source(e) {
                Some(parser) => format!("invalid JSON: {parser}"),
                None => format!("invalid JSON: {}", e.detail()),
            },
        },
        _ => located(&path, e.detail(), at),
    }
}

#[cfg(feature = "config")]
impl GateSpec {
    /// The keys the table holding the last key of `path` accepts, read from
    /// the types: [`GateSpec`]'s at the top, [`CompactCodeSpec`]'s under
    /// `compact_code`, [`RuleSpec`]'s in a rule. `path` is relative to the
    /// gate table.
    ///
    /// ```
    /// use cupel_core::strict::KeyPath;
    /// use cupel_gate::GateSpec;
    /// let keys = GateSpec::expected_keys(&KeyPath::parse("compact_code.rules[0].treshold"));
    /// assert_eq!(keys, ["language", "policy", "threshold", "inbox_key"]);
    /// ```
    pub fn expected_keys(path: &KeyPath) -> Vec<&'static str> {
        match path.parent_field() {
            None => cupel_core::strict::field_names::<GateSpec>(),
            Some("compact_code") => cupel_core::strict::field_names::<CompactCodeSpec>(),
            Some("rules") => cupel_core::strict::field_names::<RuleSpec>(),
            Some(_) => Vec::new(),
        }
    }
}

/// Every way a gate configuration can be invalid. Each message but a syntax
/// error's ([`Parse`](Self::Parse)) starts with the key path (a rule's index
/// is in it: `compact_code.rules[1].threshold`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GateConfigError {
    /// The text is not valid TOML/JSON, or its root is not a table.
    #[error("{message}")]
    Parse {
        /// The parser's message (with line and column where it gives them).
        message: String,
    },
    /// A value has the wrong type: `threshold = "0.4"`, a rule that is a
    /// string, `compact_code.rules` that is not a list, ...
    #[error("`{path}`: {message}{}", at_suffix(*.line, *.column))]
    InvalidType {
        /// Where it sits (`compact_code.rules[0].threshold`).
        path: String,
        /// What the parser expected and found.
        message: String,
        /// The 1-based line of the value, when the parser knows it.
        line: Option<usize>,
        /// The 1-based column (in characters) of the value, when known.
        column: Option<usize>,
    },
    /// A key the gate does not know.
    #[error("`{path}`: unknown key (expected one of: {})", expected.join(", "))]
    UnknownKey {
        /// Where it sits (`compact_code.rules[0].treshold`).
        path: String,
        /// The keys the table it sits in accepts, read from the types
        /// (see [`GateSpec::expected_keys`]).
        expected: Vec<&'static str>,
    },
    /// A required key is absent.
    #[error("`{path}` is required: {what}")]
    MissingKey {
        /// The missing key.
        path: String,
        /// What it means.
        what: &'static str,
    },
    /// A string that must say something is empty or whitespace.
    #[error("`{path}` must not be empty")]
    EmptyValue {
        /// The key.
        path: String,
    },
    /// `max_context_tokens` is zero or negative.
    #[error("`{path}` must be > 0 (got {value})")]
    InvalidMaxContextTokens {
        /// The key.
        path: String,
        /// The rejected value.
        value: i64,
    },
    /// A rule's `language` is not `sql` or `dotnet`.
    #[error(
        "`{path}`: rule {rule} has unknown language `{value}` (expected sql or dotnet; csharp and c# name dotnet; case does not matter)"
    )]
    UnknownLanguage {
        /// The key.
        path: String,
        /// The rule's index in `compact_code.rules`.
        rule: usize,
        /// The rejected value.
        value: String,
    },
    /// A rule's `policy` is not `always`, `threshold` or `demand`.
    #[error(
        "`{path}`: rule {rule} has unknown policy `{value}` (expected always, threshold or demand; case does not matter)"
    )]
    UnknownPolicy {
        /// The key.
        path: String,
        /// The rule's index.
        rule: usize,
        /// The rejected value.
        value: String,
    },
    /// A `threshold` rule without `threshold`.
    #[error(
        "`{path}` is required: rule {rule} has policy `threshold`, which needs a fraction of max_context_tokens in (0, 1]"
    )]
    ThresholdMissing {
        /// The missing key.
        path: String,
        /// The rule's index.
        rule: usize,
    },
    /// `threshold` outside `(0, 1]` (or NaN).
    #[error("`{path}`: rule {rule} has threshold {value}, outside (0, 1]")]
    ThresholdOutOfRange {
        /// The key.
        path: String,
        /// The rule's index.
        rule: usize,
        /// The rejected value.
        value: f64,
    },
    /// A `demand` rule without `inbox_key`.
    #[error(
        "`{path}` is required: rule {rule} has policy `demand`, which needs the topic of the messages that ask for compaction"
    )]
    InboxKeyMissing {
        /// The missing key.
        path: String,
        /// The rule's index.
        rule: usize,
    },
    /// A key that belongs to another policy (`threshold` on a `demand` rule, ...).
    #[error("`{path}`: rule {rule} has policy `{policy}`, which takes no `{key}`")]
    KeyNotForPolicy {
        /// The key.
        path: String,
        /// The rule's index.
        rule: usize,
        /// The misplaced key.
        key: &'static str,
        /// The rule's policy.
        policy: CompactionPolicyKind,
    },
}

fn at_suffix(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        (Some(l), None) => format!(" (line {l})"),
        _ => String::new(),
    }
}

impl From<GateConfigError> for CupelError {
    fn from(e: GateConfigError) -> Self {
        CupelError::PipelineConfig(format!("gate: {e}"))
    }
}
