//! How close [`AnthropicEstimate`] comes to what Anthropic billed.
//!
//! Reads usage samples (JSON lines: `request`, `input_tokens`,
//! `cache_creation_input_tokens`, `cache_read_input_tokens`, `source`, as
//! `cassettes_to_samples.py` writes them from recorded API calls) from the
//! file or directory named by `CUPEL_ANTHROPIC_SAMPLES` (default: the small
//! hand-written sample in `tests/fixtures`), estimates each request
//! uncalibrated, and prints the distribution of the relative error
//! `(estimate - billed) / billed`, where billed is `input_tokens +
//! cache_creation_input_tokens + cache_read_input_tokens`, split by kind:
//!
//! * `text`: no tools, no images, documents or thinking;
//! * `tools`: tool definitions or tool traffic, still no media or thinking;
//! * `media`: images, documents, thinking or redacted thinking;
//! * `server`: server tools (web search, code execution, tool search, MCP
//!   servers, ...), context management and structured outputs, for which
//!   Anthropic adds prompts of its own — shown, but not a target of the
//!   estimate.
//!
//! Two tables: the estimate for each request body
//! ([`AnthropicEstimate::for_request`]: its model, `tool_choice` and
//! `thinking` read) and the one that knows nothing of the request
//! ([`AnthropicEstimate::new`]). Identical request bodies are measured once.
//! `CUPEL_ANTHROPIC_VERBOSE=1` prints every sample (`for_request`).
//!
//! `CUPEL_ANTHROPIC_SAMPLES=samples.jsonl cargo run -p cupel-rs-chat --example anthropic_accuracy`
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use cupel_chat::{AnthropicEstimate, Format, Transcript};
use serde_json::Value;

/// Block types a request can hold that the estimate models as media or
/// reasoning.
const MEDIA: &[&str] = &["image", "document", "thinking", "redacted_thinking"];
/// Block types of server tools and other server-side features.
const SERVER: &[&str] = &[
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "mcp_tool_use",
    "mcp_tool_result",
    "container_upload",
    "compaction",
    "tool_addition",
    "tool_reference",
    "advisor_tool_result",
    "search_result",
];

fn files(path: &Path) -> Vec<PathBuf> {
    if path.is_dir() {
        let mut out: Vec<PathBuf> = std::fs::read_dir(path)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        out.retain(|p| p.extension().is_some_and(|e| e == "jsonl"));
        out.sort();
        out
    } else {
        vec![path.to_path_buf()]
    }
}

/// Every block type in the request's messages, tool results included.
fn block_types(v: &Value, out: &mut HashSet<String>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| block_types(i, out)),
        Value::Object(o) => {
            if let Some(t) = o.get("type").and_then(Value::as_str) {
                out.insert(t.to_string());
            }
            if let Some(c) = o.get("content") {
                block_types(c, out);
            }
        }
        _ => {}
    }
}

fn kind(req: &Value) -> &'static str {
    let mut types = HashSet::new();
    if let Some(m) = req.get("messages") {
        block_types(m, &mut types);
    }
    let tools = req.get("tools").and_then(Value::as_array);
    let server_tool = tools.is_some_and(|t| {
        t.iter().any(|t| {
            t.get("type")
                .and_then(Value::as_str)
                .is_some_and(|ty| ty != "custom")
        })
    });
    if server_tool
        || req.get("mcp_servers").is_some()
        || req.get("container").is_some()
        || req.get("context_management").is_some()
        || req.get("output_format").is_some()
        || req.pointer("/output_config/format").is_some()
        || req.pointer("/output_config/task_budget").is_some()
        || SERVER.iter().any(|s| types.contains(*s))
    {
        "server"
    } else if MEDIA.iter().any(|s| types.contains(*s)) {
        "media"
    } else if tools.is_some_and(|t| !t.is_empty())
        || types.contains("tool_use")
        || types.contains("tool_result")
    {
        "tools"
    } else {
        "text"
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    // Nearest rank: the smallest value with at least q of the samples at or below it.
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// A model using the tokenizer of Claude Opus 4.7 and later.
fn new_tokenizer(model: &str) -> bool {
    [
        "opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "haiku-5", "fable", "mythos",
    ]
    .iter()
    .any(|m| model.contains(m))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let default = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/anthropic_usage_sample.jsonl"
    );
    let path = std::env::var("CUPEL_ANTHROPIC_SAMPLES").unwrap_or_else(|_| default.to_string());
    let verbose = std::env::var("CUPEL_ANTHROPIC_VERBOSE").is_ok_and(|v| v == "1");
    let mut seen = HashSet::new();
    // (estimator, kind) -> signed relative errors
    let mut errors: BTreeMap<(&str, String), Vec<f64>> = BTreeMap::new();
    let mut skipped = 0usize;
    for file in files(Path::new(&path)) {
        for line in std::fs::read_to_string(&file)?.lines() {
            let Ok(sample) = serde_json::from_str::<Value>(line) else {
                skipped += 1;
                continue;
            };
            let req = sample.get("request").cloned().unwrap_or(Value::Null);
            if !seen.insert(req.to_string()) {
                continue;
            }
            let n = |k: &str| sample.get(k).and_then(Value::as_i64).unwrap_or(0);
            let billed =
                n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens");
            let Ok(doc) = Transcript::from_value(req.clone(), Some(Format::Anthropic)) else {
                skipped += 1;
                continue;
            };
            if billed <= 0 {
                skipped += 1;
                continue;
            }
            let model = req.get("model").and_then(Value::as_str).unwrap_or("?");
            let k = kind(&req);
            let generation = if new_tokenizer(model) {
                "4.7+"
            } else {
                "<=4.6"
            };
            for (name, estimate) in [
                ("for_request", AnthropicEstimate::for_request(&req)),
                ("new", AnthropicEstimate::new()),
            ] {
                let est = estimate.raw_request(doc.messages(), doc.tools());
                let err = (est - billed) as f64 / billed as f64;
                if verbose && name == "for_request" {
                    println!(
                        "{k:6} {billed:>7} {est:>7} {:>+7.1}%  {model} {}",
                        err * 100.0,
                        sample.get("source").and_then(Value::as_str).unwrap_or("?"),
                    );
                }
                errors.entry((name, k.to_string())).or_default().push(err);
                if k == "text" || k == "tools" {
                    errors
                        .entry((name, format!("{k} {generation}")))
                        .or_default()
                        .push(err);
                }
            }
        }
    }
    for name in ["for_request", "new"] {
        println!("\n{name}");
        println!("kind          n  median|e|   p90|e|   max|e|  mean e");
        let mut all = Vec::new();
        for ((est, k), errs) in &errors {
            if *est != name {
                continue;
            }
            row(k, errs);
            if ["text", "tools", "media"].contains(&k.as_str()) {
                all.extend_from_slice(errs);
            }
        }
        row("all*", &all);
    }
    println!("(* text, tools and media; {skipped} lines skipped)");
    Ok(())
}

fn row(kind: &str, errs: &[f64]) {
    let mut abs: Vec<f64> = errs.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let mean = errs.iter().sum::<f64>() / errs.len().max(1) as f64;
    println!(
        "{kind:11} {:>4}  {:>8.1}%  {:>6.1}%  {:>6.1}%  {:>+5.1}%",
        errs.len(),
        quantile(&abs, 0.5) * 100.0,
        quantile(&abs, 0.9) * 100.0,
        abs.last().copied().unwrap_or(f64::NAN) * 100.0,
        mean * 100.0
    );
}
