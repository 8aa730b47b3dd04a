//! `cupel gate FILE`: runs the context gate on a file and shows the decision.
//!
//! FILE (TOML, or JSON of the same shape) holds `context` (the current blocks),
//! `[gate]` (the gate's configuration), `[[nodes]]` (the retrieval buffer) and
//! `[[inbox]]` (the demand messages consumed at this step).

use std::borrow::Cow;

use clap::Args;
use cupel_gate::{
    ContextGate, GateOutcome, GateReport, GateSpec, GateState, InboxMessage, RetrievalNode,
    header_value,
};
use serde::{Deserialize, Serialize};

use crate::error::CliError;
use cupel_core::strict::KeyPath;

use crate::input::{Source, keys_hint};

/// What `cupel gate --help` says after the options.
pub(crate) const GATE_AFTER_HELP: &str = "\
The decision is `admitted` (the new blocks fit, compacted where a rule says
so) or `over` (they do not). A gate whose retrieval nodes alone need more
tokens than max_context_tokens is PIPELINE_BUDGET_MISCONFIG (exit 1):
compacting the context can never make room. An invalid configuration names
its key (gate.compact_code.rules[1].threshold).

Example:
  cupel gate examples/gate.toml
  cupel gate examples/gate.toml --format json --encoding o200k_base";

/// The default encoding when neither `--encoding` nor `gate.encoding` names one.
const DEFAULT_ENCODING: &str = "cl100k_base";

/// `cupel gate` arguments.
#[derive(Debug, Args)]
pub(crate) struct GateArgs {
    /// TOML or JSON file with context, [gate], [[nodes]] and [[inbox]]
    ///
    /// `.json` is read as JSON, `.toml` as TOML.
    #[arg(value_name = "FILE", verbatim_doc_comment)]
    file: String,

    /// Tokenizer: an encoding (cl100k_base, o200k_base, ...) or a model name
    ///
    /// Overrides gate.encoding; the default is cl100k_base.
    #[arg(long, value_name = "NAME", verbatim_doc_comment)]
    encoding: Option<String>,

    /// text (default) or json
    #[arg(
        long,
        value_enum,
        default_value_t = crate::OutputFormat::Text,
        hide_default_value = true,
        hide_possible_values = true
    )]
    format: crate::OutputFormat,
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a gate file with `context`, [gate], [[nodes]] and [[inbox]]")]
struct GateFile {
    #[serde(default)]
    context: Vec<String>,
    gate: GateSpec,
    #[serde(default)]
    nodes: Vec<NodeInput>,
    #[serde(default)]
    inbox: Vec<InboxMessage>,
}

/// One `[[nodes]]` entry: [`RetrievalNode`]'s keys with `text` optional, so
/// that a missing text is reported with its key path.
#[derive(Debug, Deserialize)]
#[serde(expecting = "a node table with `text` (and optional id, path, source, metadata)")]
struct NodeInput {
    #[serde(default, alias = "node_id")]
    id: Option<String>,
    #[serde(default, alias = "repo_relative_path")]
    path: Option<String>,
    #[serde(default, alias = "source_file")]
    source: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(
        default,
        alias = "metadata_context",
        deserialize_with = "cupel_gate::deserialize_node_metadata"
    )]
    metadata: std::collections::BTreeMap<String, String>,
}

impl NodeInput {
    fn build(self, index: usize, file: &str) -> Result<RetrievalNode, CliError> {
        let Some(text) = self.text else {
            return Err(CliError::input(format!(
                "{file}: `nodes[{index}].text` is required: the retrieved text"
            )));
        };
        let mut node = RetrievalNode::new(text);
        if let Some(id) = self.id {
            node = node.with_id(id);
        }
        if let Some(path) = self.path {
            node = node.with_path(path);
        }
        if let Some(source) = self.source {
            node = node.with_source(source);
        }
        for (k, v) in self.metadata {
            node = node.with_metadata(k, v);
        }
        Ok(node)
    }
}

/// The error for an unknown key in a gate file; the hint lists the keys
/// the file's types accept there.
fn unknown_key(path: &KeyPath) -> CliError {
    use cupel_core::strict::{PathSegment as Seg, field_names};
    let e = CliError::input(format!("unknown key `{path}`"));
    let key = |s: &Seg, want: &str| matches!(s, Seg::Key(k) if k == want);
    match path.segments() {
        [_] => e.hint(format!(
            "top-level keys are: {}",
            field_names::<GateFile>().join(", ")
        )),
        [g, rest @ ..] if key(g, "gate") => {
            let rest = KeyPath::from(rest.to_vec());
            let what = match rest.parent_field() {
                None => "gate",
                Some("compact_code") => "compact_code",
                Some(_) => "rule",
            };
            e.hint(keys_hint(what, &GateSpec::expected_keys(&rest)))
        }
        [n, ..] if key(n, "nodes") => e.hint(keys_hint("node", &field_names::<NodeInput>())),
        [i, ..] if key(i, "inbox") => {
            e.hint(keys_hint("inbox message", &field_names::<InboxMessage>()))
        }
        _ => e,
    }
}

/// Runs `cupel gate`.
pub(crate) fn run(a: &GateArgs) -> Result<String, CliError> {
    let src = Source::read(&a.file, None, "gate file")?;
    evaluate(
        &src,
        a.encoding.as_deref(),
        None,
        a.format == crate::OutputFormat::Json,
    )
}

/// Decides on the gate document `src` and renders the decision (JSON when
/// `json`). The counter is the encoding named by `encoding` (or the file's,
/// or the default), unless `counter` is given (the fuzz harness counts words,
/// so that loading a BPE table does not dominate each run).
pub(crate) fn evaluate(
    src: &Source,
    encoding: Option<&str>,
    counter: Option<(Box<dyn cupel_core::TokenCounter>, &'static str)>,
    json: bool,
) -> Result<String, CliError> {
    let file: GateFile = src.parse_strict_with_paths(unknown_key)?;
    let config = file
        .gate
        .build_at("gate.")
        .map_err(|e| CliError::input(format!("{}: {e}", src.name)))?;
    let nodes = file
        .nodes
        .into_iter()
        .enumerate()
        .map(|(i, n)| n.build(i, &src.name))
        .collect::<Result<Vec<_>, _>>()?;
    let (counter, encoding) = match counter {
        Some(given) => given,
        None => {
            let name = encoding.or(config.encoding()).unwrap_or(DEFAULT_ENCODING);
            let counter = crate::tokens::counter(name)?;
            let encoding = counter.encoding();
            (
                Box::new(counter) as Box<dyn cupel_core::TokenCounter>,
                encoding,
            )
        }
    };
    let gate = ContextGate::new(config, counter);
    let outcome = gate
        .admit(GateState::new(file.context, nodes), &file.inbox)
        .map_err(|e| match e.into_error() {
            err @ cupel_gate::GateFailure::PipelineBudgetMisconfig { .. } => {
                CliError::selection(err.to_string())
                    .hint("fetch fewer or shorter nodes, or raise gate.max_context_tokens")
            }
            err => CliError::input(err.to_string()),
        })?;
    let view = View::new(&outcome, encoding);
    if json {
        let mut s = serde_json::to_string_pretty(&view)
            .map_err(|e| CliError::input(format!("cannot serialise the decision: {e}")))?;
        s.push('\n');
        return Ok(s);
    }
    Ok(text(&view, &outcome))
}

/// `--format json`: one object, keys in this order.
#[derive(Debug, Serialize)]
struct View<'a> {
    gate: &'a str,
    encoding: &'a str,
    decision: &'static str,
    tokens: Tokens,
    nodes: Vec<NodeView<'a>>,
    context: &'a [String],
    requeue: &'a [InboxMessage],
}

#[derive(Debug, Serialize)]
struct Tokens {
    max_context_tokens: i64,
    context: i64,
    divider: i64,
    retrieval: i64,
    total: i64,
}

#[derive(Debug, Serialize)]
struct NodeView<'a> {
    id: Option<&'a str>,
    language: &'static str,
    policy: Option<&'static str>,
    compacted: bool,
    tokens_before: i64,
    tokens_after: i64,
    /// Why no rule applied (`unknown_language`, `no_rule`), when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    unmatched: Option<&'static str>,
    #[serde(skip)]
    unmatched_reason: Option<cupel_gate::Unmatched>,
}

impl<'a> View<'a> {
    fn new(outcome: &'a GateOutcome, encoding: &'a str) -> Self {
        let r: &GateReport = outcome.report();
        let (context, requeue): (&[String], &[InboxMessage]) = match outcome {
            GateOutcome::Admitted(a) => (a.context(), &[]),
            GateOutcome::Over(o) => (&o.state().context, o.requeue()),
        };
        View {
            gate: &r.gate_id,
            encoding,
            decision: r.decision.as_str(),
            tokens: Tokens {
                max_context_tokens: r.max_context_tokens,
                context: r.context_tokens,
                divider: r.divider_tokens,
                retrieval: r.retrieval_tokens,
                total: r.total_tokens,
            },
            nodes: r
                .nodes
                .iter()
                .map(|n| NodeView {
                    id: n.id.as_deref(),
                    language: n.language.as_str(),
                    policy: n.policy.map(|p| p.as_str()),
                    compacted: n.compacted,
                    tokens_before: n.tokens_before,
                    tokens_after: n.tokens_after,
                    unmatched: n.unmatched.map(|u| u.as_str()),
                    unmatched_reason: n.unmatched,
                })
                .collect(),
            context,
            requeue,
        }
    }
}

fn text(v: &View<'_>, outcome: &GateOutcome) -> String {
    let t = &v.tokens;
    let mut out = format!(
        "gate {}: {} (encoding {})\n",
        v.gate, v.decision, v.encoding
    );
    let cmp = if t.total > t.max_context_tokens {
        ">"
    } else {
        "<="
    };
    out.push_str(&format!(
        "tokens: context {} + divider {} + nodes {} = {} {cmp} max_context_tokens {}\n",
        t.context, t.divider, t.retrieval, t.total, t.max_context_tokens
    ));
    if !v.nodes.is_empty() {
        out.push('\n');
        // Ids are the caller's text: a line break in one must not forge a row.
        let ids: Vec<Cow<'_, str>> = v
            .nodes
            .iter()
            .map(|n| n.id.map_or(Cow::Borrowed("-"), header_value))
            .collect();
        let w = ids
            .iter()
            .map(|s| crate::render::width(s))
            .max()
            .unwrap_or(0)
            .max(2);
        out.push_str(&format!(
            "{:>3}  {:<w$}  {:<8}  {:<9}  {:<9}  {:>6}  {:>6}\n",
            "#", "id", "language", "policy", "compacted", "before", "after"
        ));
        for (i, (n, id)) in v.nodes.iter().zip(&ids).enumerate() {
            out.push_str(&format!(
                "{:>3}  {}  {:<8}  {:<9}  {:<9}  {:>6}  {:>6}\n",
                i + 1,
                crate::render::pad(id, w),
                n.language,
                n.policy.unwrap_or("-"),
                if n.compacted { "yes" } else { "no" },
                n.tokens_before,
                n.tokens_after
            ));
        }
        // Issue 28: a node no rule applied to says so.
        for (i, (n, id)) in v.nodes.iter().zip(&ids).enumerate() {
            if let Some(u) = n.unmatched_reason {
                out.push_str(&format!("note: node {} ({id}): {u}\n", i + 1));
            }
        }
    }
    match outcome {
        GateOutcome::Admitted(a) => {
            if a.appended().is_empty() {
                out.push_str("\nnothing to append\n");
            } else {
                out.push_str(&format!(
                    "\nappended {} block(s) to the context:\n",
                    a.appended().len()
                ));
                for b in a.appended() {
                    out.push('\n');
                    out.push_str(b);
                    out.push('\n');
                }
            }
        }
        GateOutcome::Over(o) => {
            out.push_str("\nnothing appended: compact the context, then run the gate again\n");
            if o.requeue().is_empty() {
                out.push_str("requeue: none\n");
            } else {
                for m in o.requeue() {
                    out.push_str(&format!("requeue: {} <- {}\n", m.target, m.topic));
                }
            }
        }
    }
    out
}
