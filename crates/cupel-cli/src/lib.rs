//! The `cupel` command-line tool: choose what goes into a language model's
//! context window under a token budget, and explain every decision.
//!
//! Subcommands:
//!
//! * `cupel demo` — an embedded support-chat scenario, selected and explained;
//! * `cupel select INPUT` — the ordered window (text) or the full selection
//!   report (`--format json`);
//! * `cupel explain INPUT` — every item with its status, score, tokens, kind
//!   and reason, totals, budget utilisation and a bar of the budget by kind;
//! * `cupel presets` — the named policies and what they configure;
//! * `cupel adaptive simulate` — adaptive token budgets for constant usage or
//!   a recorded CSV trace (text, JSON, an SVG chart); `cupel budget
//!   simulate`, its old name, still works (hidden alias);
//! * `cupel gate FILE` — the context gate's decision for a context, a
//!   retrieval buffer and a gate configuration;
//! * `cupel sweep INPUT` — the window at each of many budgets (table, JSON,
//!   CSV, an SVG chart stacked by kind);
//! * `cupel marginal INPUT --slack N` — the items a budget N tokens smaller
//!   would lose, with scores and reasons;
//! * `cupel min-budget INPUT --item I` — the smallest budget that selects an
//!   item (the specification's binary search; `--exact` scans every budget);
//! * `cupel compare INPUT --policy A --policy B` — one item set under several
//!   policies: who is in under which, the differences and a summary;
//! * `cupel chat FILE --max-tokens N` — an OpenAI or Anthropic chat
//!   transcript trimmed to the budget, written back in its own format
//!   (`--explain`: every message's fate; `--state FILE`: the cache-aware
//!   session, keeping the previous window's prefix);
//! * `cupel cache-sim FILE --max-tokens N --provider P` — a transcript
//!   replayed request by request: what three window strategies pay the
//!   provider's prompt cache (`--plot FILE.svg`: cost per request).
//!
//! INPUT is a TOML or JSON file with `[budget]`, an optional `[policy]` and
//! `[[items]]` (the item schema of the conformance vectors), or a JSON Lines
//! file (`.jsonl`) of items, one per line, with the budget and policy from
//! flags or `--header FILE`. Errors print one
//! `error:` line (and sometimes a `hint:` line) on stderr; exit code 2 means a
//! usage or input error, 1 a selection that could not be made.
// Doc comments on the clap types are the tool's --help text, written for a
// terminal (`[policy]` is a TOML table there, not an intra-doc link).
#![allow(rustdoc::broken_intra_doc_links)]

mod adaptive;
#[cfg(feature = "chat")]
mod cache_sim;
mod chart;
#[cfg(feature = "chat")]
mod chat;
mod compare;
mod demo;
mod error;
mod gate;
mod input;
mod json_check;
mod marginal;
mod min_budget;
mod render;
mod sweep;
mod tokens;
mod toml_split;
mod trace;
mod whatif;

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use cupel_core::{Query, SelectionReport, TokenCounter};
use cupel_pipeline::{Pipeline, RunOptions};

use crate::error::CliError;
use crate::input::{Format, Prepared, RunSettings, Source};

/// The one exit-code table, in `cupel --help`; subcommand helps point here.
const AFTER_HELP: &str = "\
Exit codes (every command):
  0  success: the window, report or decision was produced (also when no
     item is marginal, when no budget up to the ceiling selects the item,
     and when the gate says \"over\")
  1  valid input, but the result cannot be made:
     select, explain, demo, compare, marginal: pinned items exceed
       max_tokens - output_reserve, the selection overflows target_tokens
       under overflow_strategy = \"throw\", a knapsack table is over its size
       guard, or a count requirement is unmet under scarcity_behavior =
       \"throw\" (compare names the policy)
     sweep, min-budget: a probe failed for another reason than a missing
       window (a knapsack size guard, an unmet count requirement)
     gate: PIPELINE_BUDGET_MISCONFIG, the retrieval nodes alone need more
       tokens than max_context_tokens
     chat, cache-sim: the pinned prompts and request overhead exceed
       --max-tokens, or not even the newest message fits (cache-sim: in
       any request; the report is printed whole first)
  2  usage or input error: bad flags or ranges, an unreadable or malformed
     file, an unknown key (the message names it, as in
     policy.scorers[0].wieght), an invalid budget or gate configuration,
     an unknown preset, policy file or encoding, missing token counts,
     token counts whose sum overflows a 64-bit integer, a chart that cannot
     be written; or the output could not be written (a closed pipe, as in
     `cupel explain x.toml | head`, is not an error)";

/// A subcommand's own help text, then the pointer to the exit-code table.
pub(crate) fn with_exit_pointer(text: &str) -> String {
    format!("{text}\n\n{EXIT_CODES_POINTER}")
}

/// The line a subcommand's help ends with instead of its own table.
pub(crate) const EXIT_CODES_POINTER: &str = "\
Exit codes: 0 success, 1 no result on valid input, 2 usage or input error;
`cupel --help` lists what each means for every command.";

const FORMAT_SHORT: &str = "text (default) or json (the SelectionReport)";

const FORMAT_HELP: &str = "text (default) or json (the SelectionReport)

`text` is laid out for 80 columns. `json` prints the full
SelectionReport; the `duration_ms` of each stage event is the
stage's measured wall-clock time (see --zero-durations).";

const ZERO_DURATIONS_SHORT: &str = "With --format json: set every duration_ms to 0";

const ZERO_DURATIONS_HELP: &str = "With --format json: set every duration_ms to 0

Stage durations are the only part of the report that changes
from one run to the next. With this flag the same input always
gives byte-identical JSON (for snapshot tests, diffs and caches).
Text output shows no durations, so the flag changes nothing there.";

/// Choose what goes into an LLM context window under a token budget, and why.
#[derive(Debug, Parser)]
#[command(name = "cupel", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Select and explain a built-in support-chat scenario (no files needed).
    #[command(after_help = EXIT_CODES_POINTER)]
    Demo(DemoArgs),
    /// Select a context window from INPUT and print it in placed order.
    #[command(after_help = EXIT_CODES_POINTER)]
    Select(RunArgs),
    /// Explain every item of INPUT: status, score, tokens, kind and reason.
    #[command(after_help = EXIT_CODES_POINTER)]
    Explain(RunArgs),
    /// List the named presets and what each configures.
    Presets,
    /// Adaptive token budgets: simulate how the budget follows usage.
    ///
    /// `budget` is the old name, kept as a hidden alias: the `[budget]` table
    /// of an INPUT file is the context budget, this is the adaptive one.
    #[command(alias = "budget")]
    Adaptive(adaptive::AdaptiveArgs),
    /// Admit retrieval nodes into a context under a token budget, or say "over".
    #[command(after_help = with_exit_pointer(gate::GATE_AFTER_HELP))]
    Gate(gate::GateArgs),
    /// What INPUT selects at each of many budgets: items, tokens, kinds.
    #[command(after_help = with_exit_pointer(sweep::SWEEP_AFTER_HELP))]
    Sweep(sweep::SweepArgs),
    /// The items a budget N tokens smaller would lose, with scores and reasons.
    #[command(after_help = with_exit_pointer(marginal::MARGINAL_AFTER_HELP))]
    Marginal(marginal::MarginalArgs),
    /// The smallest budget at which an item of INPUT is selected.
    #[command(after_help = with_exit_pointer(min_budget::MIN_BUDGET_AFTER_HELP))]
    MinBudget(min_budget::MinBudgetArgs),
    /// INPUT's items under two or more policies: who is in under which.
    #[command(after_help = with_exit_pointer(compare::COMPARE_AFTER_HELP))]
    Compare(compare::CompareArgs),
    /// Trim an OpenAI or Anthropic chat transcript to a token budget.
    #[cfg(feature = "chat")]
    #[command(after_help = with_exit_pointer(chat::CHAT_AFTER_HELP))]
    Chat(chat::ChatArgs),
    /// Replay a chat transcript request by request: what three window strategies pay the prompt cache.
    #[cfg(feature = "chat")]
    #[command(name = "cache-sim", after_help = with_exit_pointer(cache_sim::CACHE_SIM_AFTER_HELP))]
    CacheSim(cache_sim::CacheSimArgs),
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Print the scenario as an INPUT file instead of running it
    ///
    /// Try: cupel demo --print-input > chat.toml
    #[arg(long, verbatim_doc_comment)]
    print_input: bool,

    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    query: QueryArgs,

    #[command(flatten)]
    output: OutputArgs,
}

/// The run's query, for query-aware scorers (`bm25`, the `recall` preset).
#[derive(Debug, Args)]
struct QueryArgs {
    /// What the request is about (for the `recall` preset, `bm25`)
    ///
    /// The run carries TEXT as its query; scorers that read a query
    /// (type `bm25`) rank by relevance to it, others ignore it.
    /// Without --query or --query-file the run has no query.
    #[arg(
        long,
        value_name = "TEXT",
        conflicts_with = "query_file",
        verbatim_doc_comment
    )]
    query: Option<String>,

    /// Read the query from FILE (UTF-8; `-` is stdin)
    #[arg(long, value_name = "FILE")]
    query_file: Option<String>,

    /// The query's embedding, for `vector` and `hybrid` scorers
    ///
    /// A JSON array of numbers (`[0.12, -0.4, ...]`), or `@FILE` to read
    /// the array from FILE. It must have the items' `embedding` length.
    #[arg(long, value_name = "JSON|@FILE", verbatim_doc_comment)]
    query_embedding: Option<String>,
}

impl QueryArgs {
    /// The query, read from the flag or the file.
    fn load(&self) -> Result<Option<Query>, CliError> {
        let text = match (&self.query, &self.query_file) {
            (Some(q), _) => q.clone(),
            (None, Some(path)) => {
                let read = if path == "-" {
                    std::io::read_to_string(std::io::stdin().lock())
                } else {
                    std::fs::read_to_string(path)
                };
                read.map_err(|e| CliError::input(format!("cannot read query file `{path}`: {e}")))?
            }
            (None, None) if self.query_embedding.is_some() => String::new(),
            (None, None) => return Ok(None),
        };
        if text.len() > cupel_scorers::MAX_QUERY_BYTES {
            return Err(CliError::input(format!(
                "the query is {} bytes, over the {}-byte limit",
                text.len(),
                cupel_scorers::MAX_QUERY_BYTES
            )));
        }
        let query = Query::new(text.trim());
        Ok(Some(match self.embedding()? {
            Some(e) => query.with_embedding(e),
            None => query,
        }))
    }

    /// The `--query-embedding` vector, parsed and checked.
    fn embedding(&self) -> Result<Option<Vec<f32>>, CliError> {
        let Some(arg) = &self.query_embedding else {
            return Ok(None);
        };
        let json = match arg.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path).map_err(|e| {
                CliError::input(format!("cannot read query embedding file `{path}`: {e}"))
            })?,
            None => arg.clone(),
        };
        let v: Vec<f32> = serde_json::from_str(&json).map_err(|e| {
            CliError::input(format!(
                "--query-embedding: expected a JSON array of numbers: {e}"
            ))
        })?;
        cupel_core::check_embedding(&v, "query")
            .map_err(|e| CliError::input(format!("--query-embedding: {e}")))?;
        Ok(Some(v))
    }
}

/// INPUT and everything that shapes how it is read: shared by `select`,
/// `explain`, `sweep`, `marginal` and `min-budget`.
#[derive(Debug, Args)]
pub(crate) struct InputArgs {
    /// TOML or JSON file with [budget], [policy] and [[items]]; `-` is stdin
    ///
    /// [policy] is optional. Reading stdin needs --input-format.
    /// A JSON Lines file (.jsonl, or --input-format jsonl) holds
    /// items only, one JSON object per line; give the budget with
    /// --max-tokens/--target-tokens or --header FILE.
    #[arg(value_name = "INPUT", verbatim_doc_comment)]
    pub(crate) input: String,

    /// A preset name (see `cupel presets`) or a policy file
    ///
    /// A name of a preset selects it; anything else is read as a
    /// policy file (the contents of a [policy] table; `.json` is
    /// JSON, anything else TOML). Write ./NAME for a file named
    /// like a preset. Overrides the input's [policy]; with none
    /// anywhere, the `recent-dense` preset is used. The same flag,
    /// with the same meaning, as `cupel compare --policy`.
    #[arg(
        long,
        value_name = "PRESET|FILE",
        alias = "preset",
        verbatim_doc_comment
    )]
    pub(crate) policy: Option<String>,

    #[command(flatten)]
    pub(crate) source: SourceArgs,
}

/// Budget overrides, the input syntax and token counting: every command that
/// reads INPUT takes these (`compare` too, which has its own `--policy`).
#[derive(Debug, Args)]
pub(crate) struct SourceArgs {
    /// Override the budget's max_tokens
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) max_tokens: Option<i64>,

    /// Override the budget's target_tokens
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) target_tokens: Option<i64>,

    /// Override the budget's output_reserve
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) output_reserve: Option<i64>,

    /// toml, json or jsonl (default: by extension)
    ///
    /// Syntax of INPUT: `toml`, `json` or `jsonl` (JSON Lines: one
    /// item per line, read as a stream). Required for stdin;
    /// otherwise taken from the file extension (.toml, .json,
    /// .jsonl or .ndjson).
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        hide_possible_values = true,
        verbatim_doc_comment
    )]
    pub(crate) input_format: Option<Format>,

    /// Tokenizer that counts missing `tokens` (e.g. cl100k_base)
    ///
    /// A BPE encoding (cl100k_base, o200k_base, o200k_harmony,
    /// p50k_base, p50k_edit, r50k_base) or a model name such as
    /// gpt-4o. Items that have `tokens` keep their count. The same
    /// flag as `cupel gate --encoding` and `cupel chat --encoding`.
    #[arg(
        long,
        value_name = "ENCODING",
        alias = "count-tokens",
        verbatim_doc_comment
    )]
    pub(crate) encoding: Option<String>,

    /// With JSON Lines input: [budget] and [policy] from FILE
    ///
    /// A small TOML or JSON file (`.json` is JSON, anything else
    /// TOML) with the tables a TOML INPUT would have, and no items.
    /// Flags still override its budget; --policy its policy.
    #[arg(long, value_name = "FILE", verbatim_doc_comment)]
    pub(crate) header: Option<String>,
}

impl InputArgs {
    /// Reads and validates INPUT under these settings.
    pub(crate) fn load(&self) -> Result<Prepared, CliError> {
        self.source.load(&self.input, self.policy.clone())
    }
}

impl SourceArgs {
    /// Reads and validates `input` with the given policy choice
    /// (`--policy PRESET|FILE`, else the input's own).
    pub(crate) fn load(&self, input: &str, policy: Option<String>) -> Result<Prepared, CliError> {
        let counter = self.encoding.as_deref().map(tokens::counter).transpose()?;
        let settings = RunSettings {
            policy,
            max_tokens: self.max_tokens,
            target_tokens: self.target_tokens,
            output_reserve: self.output_reserve,
            header: self.header.clone(),
        };
        let counter_ref = counter.as_ref().map(|c| {
            let name = c.encoding();
            (c as &dyn TokenCounter, name)
        });
        let jsonl = self.input_format == Some(Format::Jsonl)
            || (self.input_format.is_none()
                && input::format_from_extension(input) == Some(Format::Jsonl));
        if jsonl {
            return if input == "-" {
                input::prepare_jsonl("<stdin>", std::io::stdin().lock(), &settings, counter_ref)
            } else {
                let file = std::fs::File::open(input)
                    .map_err(|e| CliError::input(format!("cannot read input `{input}`: {e}")))?;
                let reader = std::io::BufReader::with_capacity(1 << 16, file);
                input::prepare_jsonl(input, reader, &settings, counter_ref)
            };
        }
        let src = Source::read(input, self.input_format, "input")?;
        input::prepare(&src, &settings, counter_ref)
    }
}

/// `--format`, shared by every command that prints a selection.
#[derive(Debug, Args)]
struct OutputArgs {
    #[arg(
        long,
        value_enum,
        default_value_t = OutputFormat::Text,
        hide_default_value = true,
        hide_possible_values = true,
        help = FORMAT_SHORT,
        long_help = FORMAT_HELP
    )]
    format: OutputFormat,

    #[arg(long, help = ZERO_DURATIONS_SHORT, long_help = ZERO_DURATIONS_HELP)]
    zero_durations: bool,
}

impl OutputArgs {
    /// `None` for text; for JSON, whether to zero the stage durations.
    fn json(&self) -> Option<Durations> {
        (self.format == OutputFormat::Json).then_some(if self.zero_durations {
            Durations::Zeroed
        } else {
            Durations::Measured
        })
    }
}

/// What `--format json` writes as each stage event's `duration_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Durations {
    /// The wall-clock time the stage took (the specification's meaning).
    Measured,
    /// 0.0, for byte-reproducible output (`--zero-durations`).
    Zeroed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    /// Human-readable text, laid out for 80 columns.
    Text,
    /// The SelectionReport as pretty-printed JSON.
    Json,
}

/// The `cupel` binary: parses the command line, runs the command, writes its
/// output to stdout and errors to stderr, and returns the exit code.
///
/// Output write errors are errors (exit 2, one `error:` line), except a
/// closed pipe (`cupel explain x.toml | head`), which ends the output quietly
/// with exit 0.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    let result = match cli.command {
        Command::Demo(a) => demo::run(a.print_input, a.output.json()),
        Command::Select(a) => run_input(&a, Mode::Select),
        Command::Explain(a) => run_input(&a, Mode::Explain),
        Command::Presets => Ok(render::presets()),
        Command::Adaptive(a) => adaptive::run(&a),
        Command::Gate(a) => gate::run(&a),
        Command::Sweep(a) => sweep::run(&a),
        Command::Marginal(a) => marginal::run(&a),
        Command::MinBudget(a) => min_budget::run(&a),
        Command::Compare(a) => compare::run(&a),
        #[cfg(feature = "chat")]
        Command::Chat(a) => chat::run(&a),
        #[cfg(feature = "chat")]
        Command::CacheSim(a) => cache_sim::run(&a),
    };
    match result {
        Ok(text) => match write_output(&mut std::io::stdout().lock(), text.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                let _ = writeln!(std::io::stderr().lock(), "{e}");
                ExitCode::from(e.code)
            }
        },
        Err(e) => {
            // A report made before the failure (cache-sim's table) first;
            // if it cannot be written, that error is reported too.
            if let Some(out) = &e.output
                && let Err(w) = write_output(&mut std::io::stdout().lock(), out.as_bytes())
            {
                let _ = writeln!(std::io::stderr().lock(), "{w}");
            }
            let _ = writeln!(std::io::stderr().lock(), "{e}");
            ExitCode::from(e.code)
        }
    }
}

/// Prints clap's help, version or usage error and picks the exit code: clap's
/// own (0 for `--help`/`--version`, 2 for a usage error), or 2 when the text
/// could not be written — `cupel --help > /dev/full` is a failure, not a
/// success (issue 31). A closed pipe is not an error, as in [`write_output`].
fn clap_exit(e: &clap::Error) -> ExitCode {
    let code = u8::try_from(e.exit_code()).unwrap_or(2);
    let printed = e.print().and_then(|()| {
        std::io::stdout().flush()?;
        std::io::stderr().flush()
    });
    match printed {
        Ok(()) => ExitCode::from(code),
        Err(w) if w.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(code),
        Err(w) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "error: cannot write the output: {w}"
            );
            ExitCode::from(2)
        }
    }
}

/// Writes `bytes` and flushes. A closed pipe (EPIPE: `cupel demo | head`)
/// ends the output quietly; every other write error (a full disk,
/// `> /dev/full`, an I/O error) is an error exit, so no output is lost
/// without a trace (issue 18).
fn write_output(out: &mut impl Write, bytes: &[u8]) -> Result<(), CliError> {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::input(format!("cannot write the output: {e}"))),
    }
}

/// The CLI's input path as a function, for the fuzz targets and benchmarks
/// (not a stable API): parse `bytes` as an INPUT document of `format` (TOML,
/// JSON or JSON Lines, budget flags as given), select, and render what
/// `cupel select`, `cupel explain` and `--format json` print. `Err` is the
/// message `cupel` would print.
#[doc(hidden)]
pub mod harness {
    pub use crate::input::Format;

    /// `cupel select` then `cupel explain` on `bytes`; both texts joined.
    ///
    /// # Errors
    /// The error line `cupel` would print for this input.
    pub fn select_and_explain(
        bytes: &[u8],
        format: Format,
        max_tokens: Option<i64>,
        target_tokens: Option<i64>,
    ) -> Result<String, String> {
        let settings = crate::input::RunSettings {
            max_tokens,
            target_tokens,
            ..Default::default()
        };
        let prepared = match format {
            Format::Jsonl => crate::input::prepare_jsonl("fuzz.jsonl", bytes, &settings, None),
            Format::Toml | Format::Json => {
                let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
                let mut text = text.to_string();
                if text.starts_with('\u{feff}') {
                    text.drain(..3);
                }
                let src = crate::input::Source {
                    name: "fuzz".into(),
                    text,
                    format,
                };
                crate::input::prepare(&src, &settings, None)
            }
        }
        .map_err(|e| e.to_string())?;
        let report = crate::dry_run(&prepared).map_err(|e| e.to_string())?;
        let mut out = crate::render::window(&prepared, &report);
        out.push_str(&crate::render::explain_table(&prepared, &report));
        out.push_str(&crate::render::totals(&prepared, &report));
        let json = crate::json(report, crate::Durations::Zeroed).map_err(|e| e.to_string())?;
        out.push_str(&json);
        Ok(out)
    }

    /// `cupel gate` on a gate document held in memory (TOML or JSON per
    /// `format`), counting whitespace-separated words instead of BPE tokens:
    /// the text and the JSON renderings joined. `Err` is the message `cupel`
    /// would print.
    pub fn gate(bytes: &[u8], format: Format) -> Result<String, String> {
        struct Words;
        impl cupel_core::TokenCounter for Words {
            fn count_tokens(&self, text: &str) -> i64 {
                i64::try_from(text.split_whitespace().count()).unwrap_or(i64::MAX)
            }
        }
        let text = crate::input::utf8_text(bytes.to_vec(), "fuzz", 1).map_err(|e| e.to_string())?;
        let src = crate::input::Source {
            name: "fuzz".into(),
            text,
            format,
        };
        let words = || {
            Some((
                Box::new(Words) as Box<dyn cupel_core::TokenCounter>,
                "words",
            ))
        };
        let a = crate::gate::evaluate(&src, None, words(), false).map_err(|e| e.to_string())?;
        let b = crate::gate::evaluate(&src, None, words(), true).map_err(|e| e.to_string())?;
        Ok(a + &b)
    }

    /// `cupel adaptive simulate --trace` on a CSV trace held in memory, with
    /// margin `margin` (a decimal such as `0.1`): the explained text and the
    /// JSON joined; the chart is drawn in memory. `Err` is the message
    /// `cupel` would print.
    pub fn budget_trace(text: &str, margin: &str) -> Result<String, String> {
        let margin: rust_decimal::Decimal = margin.parse().map_err(|e| format!("{e}"))?;
        crate::adaptive::simulate_trace_text(text, margin).map_err(|e| e.to_string())
    }

    /// Reads `text` as a TOML INPUT twice — one `[[items]]` table at a time
    /// (what `cupel` does) and as one document — and says how the two
    /// differ, if they do: both must fail, or both give the same items,
    /// budget and policy.
    ///
    /// # Errors
    /// A description of the difference.
    pub fn toml_split_agrees(text: &str) -> Result<(), String> {
        let src = crate::input::Source {
            name: "fuzz.toml".into(),
            text: text.to_string(),
            format: Format::Toml,
        };
        let settings = crate::input::RunSettings::default();
        let split = crate::input::prepare_with(&src, &settings, None, true);
        let whole = crate::input::prepare_with(&src, &settings, None, false);
        let show =
            |p: &crate::input::Prepared| format!("{:?}\n{:?}\n{:?}", p.items, p.budget, p.config);
        match (&split, &whole) {
            (Ok(a), Ok(b)) if show(a) == show(b) => Ok(()),
            (Err(_), Err(_)) => Ok(()),
            (a, b) => Err(format!(
                "split: {:?}\nwhole: {:?}",
                a.as_ref().map(show).map_err(ToString::to_string),
                b.as_ref().map(show).map_err(ToString::to_string)
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Select,
    Explain,
}

fn run_input(a: &RunArgs, mode: Mode) -> Result<String, CliError> {
    let prepared = a.input.load()?;
    let query = a.query.load()?;
    let report = match &query {
        None => dry_run(&prepared)?,
        Some(q) => Pipeline::new(prepared.policy.clone(), prepared.budget.clone())
            .run_with(
                &prepared.items,
                RunOptions::new().dry(true).report(true).query(q),
            )
            .map_err(|e| CliError::from_run(&e))?
            .report
            .unwrap_or_default(),
    };
    if let Some(durations) = a.output.json() {
        return json(report, durations);
    }
    let mut out = render::header(&prepared);
    out.push('\n');
    match mode {
        Mode::Select => out.push_str(&render::window(&prepared, &report)),
        Mode::Explain => {
            out.push_str(render::EXPLAIN_CAPTION);
            out.push_str(&render::explain_table(&prepared, &report));
            out.push('\n');
            out.push_str(&render::totals(&prepared, &report));
        }
    }
    Ok(out)
}

/// Runs the pipeline once, explaining every decision.
fn dry_run(p: &Prepared) -> Result<SelectionReport, CliError> {
    Pipeline::new(p.policy.clone(), p.budget.clone())
        .dry_run(&p.items)
        .map_err(|e| CliError::from_run(&e))
}

/// The report as pretty JSON; stage durations as measured unless zeroed.
fn json(mut report: SelectionReport, durations: Durations) -> Result<String, CliError> {
    if durations == Durations::Zeroed {
        for e in &mut report.events {
            e.duration_ms = 0.0;
        }
    }
    let mut s = serde_json::to_string_pretty(&report)
        .map_err(|e| CliError::selection(format!("cannot serialise the report: {e}")))?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// A writer that fails every write with `kind`.
    struct Failing(std::io::ErrorKind);
    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(self.0))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn only_a_closed_pipe_ends_output_quietly() {
        use std::io::ErrorKind;
        assert!(write_output(&mut Failing(ErrorKind::BrokenPipe), b"x").is_ok());
        for kind in [
            ErrorKind::StorageFull,
            ErrorKind::Other,
            ErrorKind::PermissionDenied,
        ] {
            let e = write_output(&mut Failing(kind), b"x").unwrap_err();
            assert!(
                e.message.starts_with("cannot write the output"),
                "{}",
                e.message
            );
            assert_eq!(e.code, 2);
        }
        let mut ok = Vec::new();
        assert!(write_output(&mut ok, b"abc").is_ok());
        assert_eq!(ok, b"abc");
    }
}
