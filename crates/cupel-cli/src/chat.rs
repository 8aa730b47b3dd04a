//! `cupel chat FILE`: trim an OpenAI (Chat Completions or Responses),
//! Anthropic or Gemini transcript to a token budget and write it back in
//! its own format (or explain every message).

use std::sync::Arc;

use clap::{Args, ValueEnum};
use cupel_chat::{
    AgeToolResults, AnthropicEstimate, Calibration, ChatError, Decision, Format, GeminiEstimate,
    Granularity, MessageCounter, MessageRow, Observation, RecallOptions, ResponsesCounter,
    Transcript, Trim, trim_or_rows,
};

use crate::error::CliError;

pub(crate) const CHAT_AFTER_HELP: &str = "\
FILE is an OpenAI Chat Completions, Anthropic Messages, OpenAI Responses
or Gemini document: a bare array (messages, input items or contents) or a
whole request body (its other fields, such as `model` and `tools`, are
written back unchanged). The newest messages that fit are
kept, without holes; a tool call and its results move together; the system
prompt is pinned; the conversation starts with a user message. A one-task
agent loop (one user message, then tool calls and results) keeps its task
pinned after the system prompt, followed by the newest tool traffic
(--pin-first-user pins the first user message of any transcript). Kept
messages are written byte for byte as they were read; an Anthropic user turn
carrying tool results and new text is the one message that may be rewritten,
without the results whose calls were cut (--explain says so).

Examples:
  cupel chat transcript.json --max-tokens 2000 > trimmed.json
  cupel chat transcript.json --max-tokens 2000 --explain
  cat body.json | cupel chat - --max-tokens 8000 --provider anthropic
  cupel chat turn.json --max-tokens 40000 --state window.json > request.json
  cupel chat body.json --max-tokens 8000 --input-tokens 12345 --explain

With --state FILE the window is cache-aware: the previous window (read from
FILE, if it exists) is kept byte for byte and new messages are appended;
when the budget is reached, whole exchanges are cut from the front down to
a low-water mark, once. The new window is written back to FILE; an Anthropic
request gets cache_control markers (see `cupel cache-sim`), which replace the
input's own: at most 4, as Anthropic requires. FILE is replaced atomically
under a lock, so concurrent runs on one FILE never tear it or lose a turn.
An empty, corrupt, newer or foreign FILE (another provider, model, encoding
or conversation) is an error; --reset-state starts the conversation afresh.

With --recall the window keeps the newest turns up to --recall-share of the
conversation budget (after the pinned prompts) and fills the rest with the
older messages most relevant to the query (BM25; default query: the newest
user message's text), written as text into one context message placed
right after the pinned prompts (OpenAI: a system message; Anthropic: a user
message), each line `[date] speaker: text` (the date from a message's
`timestamp`, `created_at` or `date` field, the speaker its `name` or role).
Tool calls move with their results. --explain gives each older message's
relevance and the query words it matched.
  cupel chat long.json --max-tokens 4000 --recall --explain
  cupel chat long.json --max-tokens 4000 --recall --recall-query 'Tokyo flight'";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Provider {
    /// OpenAI Chat Completions.
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses (`input` items).
    Responses,
    /// Gemini generateContent (`contents`).
    Gemini,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Unit {
    /// A message, or a tool call with all its results.
    Message,
    /// A user message with the replies and tool traffic up to the next one.
    Exchange,
    /// A run of one side's messages.
    Turn,
}

#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// Chat transcript (JSON); `-` is stdin
    #[arg(value_name = "FILE")]
    input: String,

    /// The most input tokens the trimmed request may cost
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    max_tokens: i64,

    /// openai, anthropic, responses or gemini (default: detected from the document)
    #[arg(long, value_enum, value_name = "PROVIDER", hide_possible_values = true)]
    provider: Option<Provider>,

    /// OpenAI token encoding: o200k_base (default) or cl100k_base
    ///
    /// Or an OpenAI model name such as gpt-4o or gpt-4. Anthropic
    /// documents are counted with a documented estimate instead.
    #[arg(long, value_name = "ENCODING", verbatim_doc_comment)]
    encoding: Option<String>,

    /// What moves in and out as one piece: message (default), exchange or turn
    #[arg(long, value_enum, value_name = "UNIT", hide_possible_values = true)]
    granularity: Option<Unit>,

    /// Keep tool results without their call and calls never answered
    ///
    /// By default they are dropped (and named in --explain): a
    /// provider refuses a window that holds them.
    #[arg(long, verbatim_doc_comment)]
    keep_orphans: bool,

    /// Treat system and developer messages like any other (not pinned)
    #[arg(long)]
    no_pin_system: bool,

    /// Pin the first user message (the task) after the system prompt
    ///
    /// The window's newest part may then start at any unit, an
    /// assistant tool call included. Automatic for a one-task agent
    /// loop (the only user message, followed by tool calls);
    /// --no-pin-first-user turns that off.
    #[arg(long, verbatim_doc_comment, conflicts_with = "no_pin_first_user")]
    pin_first_user: bool,

    /// Never pin the first user message, not even in a one-task agent loop
    #[arg(long)]
    no_pin_first_user: bool,

    /// Write the trimmed document on one line (whitespace outside strings
    /// removed; literals and escapes untouched)
    #[arg(long)]
    compact: bool,

    /// Print the per-message table instead of the trimmed document
    #[arg(long)]
    explain: bool,

    /// Shorten tool results with at least K user messages after them
    ///
    /// Before a unit is dropped, its old results are tried as head and
    /// tail (--truncate-results-to), then as a one-line placeholder; the
    /// tool call is never changed. With --state, results are shortened
    /// only when the session cuts (the prefix is rewritten then anyway),
    /// down to the low-water mark, and stay so until a later cut.
    #[arg(long, value_name = "K", verbatim_doc_comment)]
    age_tool_results: Option<usize>,

    /// Size of a shortened tool result, in message tokens (default 200)
    #[arg(
        long,
        value_name = "N",
        requires = "age_tool_results",
        allow_negative_numbers = true
    )]
    truncate_results_to: Option<i64>,

    /// Cache-aware session: read the previous window from FILE (if it
    /// exists), keep its prefix, write the new window back to FILE
    #[arg(long, value_name = "FILE")]
    state: Option<String>,

    /// With --state: forget the stored state and start the conversation's
    /// cache-aware windows afresh (a corrupt, foreign or newer state is
    /// never reset without it)
    #[arg(long, requires = "state")]
    reset_state: bool,

    /// The input tokens the provider reported for this same document
    ///
    /// Anthropic and OpenAI Responses: usage.input_tokens (with
    /// Anthropic prompt caching, add cache_creation_input_tokens and
    /// cache_read_input_tokens); Gemini: usageMetadata.promptTokenCount.
    /// The count of the whole document is scaled to match it (a
    /// calibration from this one observation) before the trim. Not for
    /// Chat Completions, counted with its tokenizer.
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        verbatim_doc_comment
    )]
    input_tokens: Option<i64>,

    /// Write Anthropic cache_control markers into the trimmed request
    ///
    /// At the end of the pinned prompts and of the window (each when
    /// at least 1,024 tokens), plus one within the 20-block lookback.
    /// They replace every marker of the input (on tools, system,
    /// messages, tool results, the top-level field), so the request
    /// never carries more than Anthropic's 4. Always on with --state;
    /// off by default otherwise, so that a plain trim writes back
    /// exactly the fields it read. OpenAI documents need no markers
    /// and are written unchanged.
    #[arg(long, verbatim_doc_comment)]
    cache_breakpoints: bool,

    /// Recall window: newest turns up to --recall-share of the budget,
    /// then the older messages most relevant to the query (see below)
    #[arg(long, conflicts_with_all = ["state", "summarize", "summarize_with"])]
    recall: bool,

    /// The query older messages are ranked by (default: the newest user
    /// message's text)
    #[arg(long, value_name = "TEXT", requires = "recall")]
    recall_query: Option<String>,

    /// Share of the conversation budget the newest turns may fill, in
    /// (0, 1] (default 0.5)
    #[arg(long, value_name = "SHARE", requires = "recall")]
    recall_share: Option<f64>,
    /// Fold what leaves the window into one running summary
    ///
    /// The built-in summariser is an offline, deterministic digest: per
    /// evicted exchange its date (when known), the user's request, the
    /// tools called and the assistant's conclusion. The summary is one
    /// message after the pinned prompts (OpenAI: system; Anthropic:
    /// user), counted in the budget (--summary-max-tokens are held
    /// back). With --state it changes only when the session cuts (a
    /// cut then keeps the newest 20 messages, fewer when the session's
    /// default low-water mark is smaller) and the state file keeps it.
    #[arg(long, verbatim_doc_comment, conflicts_with = "summarize_with")]
    summarize: bool,

    /// Summarise with an external command (run by `sh -c`)
    ///
    /// It reads a JSON document on stdin (previous_summary, messages in
    /// the transcript's format, text, max_tokens) and writes the new
    /// summary on stdout. A non-zero exit, a timeout, more than 10 MB of
    /// output or invalid UTF-8 is an error (exit 1) after the window is
    /// written with the previous summary in place.
    #[arg(long, value_name = "CMD", verbatim_doc_comment)]
    summarize_with: Option<String>,

    /// Seconds the --summarize-with command has (default 60)
    #[arg(long, value_name = "SECS", requires = "summarize_with")]
    summarize_timeout: Option<f64>,

    /// The most tokens the summary message may hold (default 512);
    /// a longer summary is cut after its last sentence that fits
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    summary_max_tokens: Option<i64>,
}

/// The compaction the flags ask for, if any.
fn compaction(a: &ChatArgs) -> Result<Option<cupel_chat::Compaction>, CliError> {
    use cupel_chat::{CommandSummarizer, Compaction, DigestSummarizer};
    let c = match (&a.summarize_with, a.summarize) {
        (Some(cmd), _) => {
            let mut s = CommandSummarizer::new(cmd.clone());
            if let Some(secs) = a.summarize_timeout {
                if !(secs.is_finite() && secs > 0.0) {
                    return Err(CliError::input(format!(
                        "--summarize-timeout must be a positive number of seconds, got {secs}"
                    )));
                }
                s = s.timeout(std::time::Duration::from_secs_f64(secs));
            }
            Compaction::new(s)
        }
        (None, true) => Compaction::new(DigestSummarizer::new()),
        (None, false) => {
            if a.summary_max_tokens.is_some() {
                return Err(CliError::input(
                    "--summary-max-tokens needs --summarize or --summarize-with",
                ));
            }
            return Ok(None);
        }
    };
    match a.summary_max_tokens {
        Some(n) => c
            .max_tokens(n)
            .map(Some)
            .map_err(|e| CliError::input(format!("--summary-max-tokens: {e}"))),
        None => Ok(Some(c)),
    }
}

/// The error for a summary that could not be made (the window, with the
/// previous summary in place, is the output).
pub(crate) fn summary_failure(report: Option<&cupel_chat::SummaryReport>) -> Option<CliError> {
    let r = report?;
    match &r.status {
        cupel_chat::SummaryStatus::Failed(why) => Some(
            CliError::selection(format!("no new summary: {why}")).hint(match &r.summary {
                Some(_) => "the window was written with the previous summary in place; the evicted messages are folded at the next cut",
                None => "the window was written without a summary; the evicted messages are folded at the next cut",
            }),
        ),
        _ => None,
    }
}

/// The error `cupel chat` reports for `e` (with its exit code); `cupel
/// cache-sim` exits with the same code for a request it cannot window.
pub(crate) fn map_err(e: ChatError, input: &str) -> CliError {
    match e {
        ChatError::Json { .. } | ChatError::Shape { .. } => {
            CliError::input(format!("{input}: {e}"))
        }
        ChatError::UnknownEncoding { .. } => {
            CliError::input(e.to_string()).hint("use --encoding o200k_base or cl100k_base")
        }
        ChatError::PinnedOverBudget { .. } => CliError::selection(e.to_string())
            .hint("raise --max-tokens, or unpin the system prompt with --no-pin-system"),
        ChatError::SummaryReserve { .. } => CliError::selection(e.to_string())
            .hint("lower --summary-max-tokens, or raise --max-tokens"),
        ChatError::PinnedToolTraffic { .. } => CliError::input(format!("{input}: {e}"))
            .hint("remove the message's tool fields, or pass --no-pin-system to trim it with its tool group"),
        ChatError::NoConversation { .. } => CliError::selection(format!("{input}: {e}")).hint(
            "a window needs a user message to start on, and each tool result needs the assistant message that makes its call; --pin-first-user keeps an agent loop's task and the newest tool traffic; --explain lists every message's fate",
        ),
        ChatError::NothingFits {
            whole_conversation: true,
            ..
        } => CliError::selection(e.to_string()).hint(
            "raise --max-tokens, or use a finer --granularity (message), or --pin-first-user for an agent loop",
        ),
        ChatError::NothingFits { .. } => {
            CliError::selection(e.to_string()).hint("raise --max-tokens")
        }
        ChatError::InvalidRecall { .. } => {
            CliError::input(e.to_string()).hint("--recall-share takes a number above 0 and at most 1, e.g. 0.5")
        }
        other => CliError::input(other.to_string()),
    }
}

fn read(input: &str) -> Result<String, CliError> {
    let mut text = if input == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .map_err(|e| CliError::input(format!("cannot read the transcript from stdin: {e}")))?;
        s
    } else {
        std::fs::read_to_string(input)
            .map_err(|e| CliError::input(format!("cannot read transcript `{input}`: {e}")))?
    };
    if text.starts_with('\u{feff}') {
        text.drain(..3);
    }
    Ok(text)
}

/// The trim's options from the command line (budget, pins, counter,
/// ageing, recall) and the counter's calibration, if any.
fn trim_options(a: &ChatArgs, doc: &Transcript) -> Result<(Trim, Option<(i64, i64)>), CliError> {
    let mut opts = Trim::new(doc.format(), a.max_tokens)
        .keep_orphans(a.keep_orphans)
        .pin_system(!a.no_pin_system)
        // The command line prints rows, never the report: no need to build it.
        .report(false)
        .granularity(granularity(a.granularity.unwrap_or(Unit::Message)));
    if a.pin_first_user || a.no_pin_first_user {
        opts = opts.pin_first_user(a.pin_first_user);
    }
    if let Some(e) = &a.encoding {
        opts = opts.encoding(e.clone());
    }
    let counted = counter(doc, a.encoding.as_deref(), a.input_tokens)?;
    let calibrated = counted.as_ref().and_then(|c| c.calibrated);
    if let Some(c) = counted {
        opts = opts.counter(c.estimate);
    }
    if let Some(aging) = aging(a.age_tool_results, a.truncate_results_to)? {
        opts = opts.age_tool_results(aging);
    }
    if a.recall {
        let mut r = RecallOptions::new();
        if let Some(q) = &a.recall_query {
            r = r.query(q.clone());
        }
        if let Some(share) = a.recall_share {
            r = r.newest_share(share);
        }
        opts = opts.recall(r);
    }
    Ok((opts, calibrated))
}

/// The chat crate's unit for the command line's `--granularity`.
fn granularity(u: Unit) -> Granularity {
    match u {
        Unit::Message => Granularity::Message,
        Unit::Exchange => Granularity::Exchange,
        Unit::Turn => Granularity::Turn,
    }
}

pub(crate) fn run(a: &ChatArgs) -> Result<String, CliError> {
    let name = if a.input == "-" {
        "<stdin>"
    } else {
        a.input.as_str()
    };
    let text = read(&a.input)?;
    let format = a.provider.map(|p| match p {
        Provider::Openai => Format::OpenAi,
        Provider::Anthropic => Format::Anthropic,
        Provider::Responses => Format::Responses,
        Provider::Gemini => Format::Gemini,
    });
    let detected = format.is_none();
    // The transcript keeps the text (kept messages are written from it).
    let doc = Transcript::from_text(text, format).map_err(|e| map_err(e, name))?;
    if a.max_tokens <= 0 {
        return Err(CliError::input(format!(
            "--max-tokens must be positive, got {}",
            a.max_tokens
        )));
    }
    let (mut opts, calibrated) = trim_options(a, &doc)?;
    let compaction = compaction(a)?;
    if let Some(state) = &a.state {
        let g = a.granularity.map(granularity);
        let state = crate::cache_sim::StateArgs {
            path: state,
            reset: a.reset_state,
            explain: a.explain,
        };
        return crate::cache_sim::run_with_state(&doc, opts, g, &state, name, compaction);
    }
    if let Some(c) = compaction {
        opts = opts.summarize(c);
    }
    let opts = cupel_chat::document_options(&doc, &opts);
    let out = match trim_or_rows(doc.messages(), &opts) {
        Ok(out) => out,
        Err((e, rows)) if a.explain => {
            // Explain what is known, then fail as without --explain.
            let mut s = String::new();
            header(&mut s, a, &doc, name, detected, None, calibrated);
            table(&mut s, &rows);
            let err = map_err(e, name);
            s.push('\n');
            crate::render::labelled(&mut s, "", 0, &format!("no window: {}", err.message));
            return Err(err.with_output(s));
        }
        Err((e, _)) => return Err(map_err(e, name)),
    };
    if !a.explain {
        let text = window_text(a, &doc, &out);
        return match summary_failure(out.summary.as_ref()) {
            Some(e) => Err(e.with_output(text)),
            None => Ok(text),
        };
    }
    let mut s = String::new();
    header(&mut s, a, &doc, name, detected, Some(&out), calibrated);
    table(&mut s, &out.rows);
    if !out.notes.is_empty() {
        s.push('\n');
        for note in &out.notes {
            crate::render::labelled(&mut s, "input    ", 9, &note.to_string());
        }
    }
    s.push('\n');
    crate::render::labelled(&mut s, "", 0, &summary(&out, doc.messages().len()));
    if let Some(r) = &out.summary {
        crate::render::labelled(&mut s, "", 0, &r.to_string());
    }
    Ok(s)
}

/// The trimmed document as written: every kept message as read, the
/// markers when asked, on one line when asked, with a final newline.
fn window_text(a: &ChatArgs, doc: &Transcript, out: &cupel_chat::Trimmed<'_>) -> String {
    let mut s = if a.cache_breakpoints {
        let window = doc.window_of(out);
        let profile = cupel_chat::CacheProfile::anthropic();
        let marks = out.breakpoints(window.format(), &profile);
        let value = cupel_chat::apply_breakpoints(&window, &marks, &profile);
        window.json_of(&value)
    } else {
        doc.window_json(out)
    };
    if a.compact {
        s = cupel_chat::compact_json(&s);
    }
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// The `--explain` closing line: what was kept and dropped, and why.
fn summary(out: &cupel_chat::Trimmed<'_>, total: usize) -> String {
    let rules = out
        .dropped()
        .filter(|r| r.decision.is_provider_rule())
        .count();
    let kept = out.positions.len();
    let dropped = total - kept;
    let plural = |n: usize| if n == 1 { "message" } else { "messages" };
    let rules = match rules {
        0 => String::new(),
        1 if dropped == 1 => ", only for the provider's rules".to_string(),
        n => format!(", {n} of them only for the provider's rules"),
    };
    let rewritten = out
        .rows
        .iter()
        .filter(|r| matches!(r.decision, Decision::Partial { .. }))
        .count();
    let rewritten = match rewritten {
        0 => String::new(),
        n => format!("; {n} kept without the tool results whose calls are out (rewritten)"),
    };
    let recalled = match out.recall.as_ref().filter(|r| r.message.is_some()) {
        Some(r) => format!(
            "; {} of the dropped recalled into one context message ({} tokens)",
            r.positions.len(),
            cupel_chat::group_digits(r.tokens)
        ),
        None => String::new(),
    };
    format!(
        "kept {kept} {} ({} tokens), dropped {dropped} ({} tokens{rules}){rewritten}{recalled}",
        plural(kept),
        cupel_chat::group_digits(out.tokens.kept),
        cupel_chat::group_digits(out.tokens.dropped),
    )
}

/// The `--explain` header: the document, the counter, the budget, what is
/// pinned and (when there is one) the window.
fn header(
    s: &mut String,
    a: &ChatArgs,
    doc: &Transcript,
    name: &str,
    detected: bool,
    out: Option<&cupel_chat::Trimmed<'_>>,
    calibrated: Option<(i64, i64)>,
) {
    let total = doc.messages().len();
    let mut head = vec![(
        "chat     ",
        format!(
            "{name}: {} ({}), {total} messages",
            doc.format(),
            if detected { "detected" } else { "--provider" }
        ),
    )];
    if let Some(out) = out {
        head.push((
            "counted  ",
            match calibrated {
                Some((billed, raw)) => format!(
                    "{} from {} {} (estimated {})",
                    out.counter,
                    if doc.format() == Format::Gemini {
                        "usageMetadata.promptTokenCount"
                    } else {
                        "usage.input_tokens"
                    },
                    cupel_chat::group_digits(billed),
                    cupel_chat::group_digits(raw)
                ),
                None => out.counter.clone(),
            },
        ));
        head.push((
            "budget   ",
            format!(
                "max_tokens {}; request overhead {}{}",
                cupel_chat::group_digits(a.max_tokens),
                cupel_chat::group_digits(out.tokens.overhead),
                overhead_parts(&out.tokens)
            ),
        ));
        if let Some(task) = out
            .rows
            .iter()
            .find(|r| matches!(r.decision, Decision::PinnedTask { .. }))
        {
            let why = match task.decision {
                Decision::PinnedTask { automatic: true } => {
                    "automatically: the only user message, followed by tool calls (a one-task agent loop; --no-pin-first-user turns this off)"
                }
                _ => "--pin-first-user",
            };
            head.push((
                "task     ",
                format!("#{} pinned after the system prompt, {why}", task.position),
            ));
        }
        if let Some(r) = &out.recall {
            head.push(("recall   ", recall_line(a, r)));
        }
        head.push((
            "window   ",
            format!(
                "{} of {total} messages, {} tokens ({:.1}% of max_tokens)",
                out.positions.len(),
                cupel_chat::group_digits(out.tokens.window),
                out.tokens.window as f64 * 100.0 / a.max_tokens as f64,
            ),
        ));
    } else {
        head.push((
            "budget   ",
            format!("max_tokens {}", cupel_chat::group_digits(a.max_tokens)),
        ));
    }
    for (label, text) in head {
        crate::render::labelled(s, label, 9, &text);
    }
}

/// The `--explain` header's recall line: the query, the newest share, and
/// what was recalled where (or why nothing was).
fn recall_line(a: &ChatArgs, r: &cupel_chat::Recall) -> String {
    let source = if a.recall_query.is_some() {
        "--recall-query"
    } else {
        "the newest user message"
    };
    let mut query: String = r.query.chars().take(80).collect();
    if query.len() < r.query.len() {
        query.push('…');
    }
    let head = format!(
        "query {query:?} ({source}); newest turns up to {} tokens ({}% of the conversation budget)",
        cupel_chat::group_digits(r.newest_budget),
        (a.recall_share.unwrap_or(0.5) * 100.0).round()
    );
    match &r.skipped {
        Some(why) => format!(
            "{head}; nothing recalled: {why}, so the window is the newest turns of the whole budget"
        ),
        None => {
            let at: Vec<String> = r.positions.iter().map(|p| format!("#{p}")).collect();
            format!(
                "{head}; of {} older units ranked, recalled {} ({}) as one context message of {} tokens, window message {} (after the pinned prompts)",
                r.candidates,
                if r.positions.len() == 1 {
                    "1 message".to_string()
                } else {
                    format!("{} messages", r.positions.len())
                },
                at.join(", "),
                cupel_chat::group_digits(r.tokens),
                r.at
            )
        }
    }
}

/// The per-message table.
fn table(s: &mut String, rows: &[MessageRow<'_>]) {
    s.push('\n');
    s.push_str("   #   tokens  message\n");
    for r in rows {
        // Wrapped to 80 columns under the message column (labels and
        // reasons can be long: tool names, call ids, group sizes).
        let lead = format!(
            "{:>4}  {:>7}  ",
            r.position,
            cupel_chat::group_digits(r.tokens)
        );
        let indent = crate::render::width(&lead);
        crate::render::labelled(s, &lead, indent, &format!("{} {}", r.label(), r.reason()));
    }
}

/// A document's estimate, by format.
enum Estimate {
    Anthropic(AnthropicEstimate),
    Responses(ResponsesCounter),
    Gemini(GeminiEstimate),
}

impl Estimate {
    /// The uncalibrated count of the whole document.
    fn raw(&self, doc: &Transcript) -> i64 {
        let (m, t) = (doc.messages(), doc.tools());
        match self {
            Estimate::Anthropic(e) => e.raw_request(m, t),
            Estimate::Responses(e) => e.raw_request(m, t),
            Estimate::Gemini(e) => e.raw_request(m, t),
        }
    }

    /// The counter, calibrated by `fit` when given.
    fn counter(&self, fit: Option<&Calibration>) -> Arc<dyn MessageCounter> {
        match (self, fit) {
            (Estimate::Anthropic(e), Some(f)) => Arc::new(e.clone().calibrated(f)),
            (Estimate::Anthropic(e), None) => Arc::new(e.clone()),
            (Estimate::Responses(e), Some(f)) => Arc::new(e.clone().calibrated(f)),
            (Estimate::Responses(e), None) => Arc::new(e.clone()),
            (Estimate::Gemini(e), Some(f)) => Arc::new(e.clone().calibrated(f)),
            (Estimate::Gemini(e), None) => Arc::new(e.clone()),
        }
    }
}

/// The counter of a document with an estimate or a calibration, and the
/// reported and the counted input tokens it was calibrated from
/// (`--input-tokens`).
struct Counted {
    estimate: Arc<dyn MessageCounter>,
    calibrated: Option<(i64, i64)>,
}

/// The counter of a document: Anthropic's estimate for its request body
/// (model, `tool_choice`, `thinking`), the Responses tokenizer count or
/// the Gemini estimate, each scaled to `--input-tokens` when given.
/// `None` for a Chat Completions document, counted with its tokenizer.
fn counter(
    doc: &Transcript,
    encoding: Option<&str>,
    input_tokens: Option<i64>,
) -> Result<Option<Counted>, CliError> {
    let encoding = encoding.unwrap_or("o200k_base");
    let estimate = match doc.format() {
        // The body's fields (model, tool_choice, thinking), not the messages.
        Format::Anthropic => Estimate::Anthropic(AnthropicEstimate::for_request(&doc.body_value())),
        Format::Responses => Estimate::Responses(
            ResponsesCounter::new(encoding)
                .map_err(|e| CliError::input(format!("--encoding: {e}")))?,
        ),
        Format::Gemini => Estimate::Gemini(GeminiEstimate::new()),
        _ => {
            return match input_tokens {
                None => Ok(None),
                Some(_) => Err(CliError::input(
                    "--input-tokens calibrates an estimate (Anthropic, OpenAI Responses, Gemini); a Chat Completions document is counted with its tokenizer",
                )),
            };
        }
    };
    let make = |fit: Option<&Calibration>| estimate.counter(fit);
    let Some(billed) = input_tokens else {
        return Ok(Some(Counted {
            estimate: make(None),
            calibrated: None,
        }));
    };
    // Counted only to calibrate: without `--input-tokens` the session
    // counts what it needs (a resumed one, only the new messages).
    let raw = estimate.raw(doc);
    if billed <= 0 {
        return Err(CliError::input(format!(
            "--input-tokens must be positive, got {billed}"
        )));
    }
    let fit = Calibration::fit(&[Observation {
        estimate: raw,
        actual: billed,
    }])
    .map_err(|e| {
        CliError::input(format!(
            "--input-tokens: the document estimates to {raw} tokens: {e}"
        ))
    })?;
    Ok(Some(Counted {
        estimate: make(Some(&fit)),
        calibrated: Some((billed, raw)),
    }))
}

/// `--age-tool-results K [--truncate-results-to N]` (of `chat` and
/// `cache-sim`) as the trim option.
pub(crate) fn aging(
    after_exchanges: Option<usize>,
    truncate_to: Option<i64>,
) -> Result<Option<AgeToolResults>, CliError> {
    let Some(k) = after_exchanges else {
        return Ok(None);
    };
    let mut aging = AgeToolResults::new(k);
    if let Some(n) = truncate_to {
        aging = aging
            .truncate_to(n)
            .map_err(|e| CliError::input(format!("--truncate-results-to: {e}")))?;
    }
    Ok(Some(aging))
}

/// ` (112 of tool definitions, 3 of reply priming)`: the overhead's
/// non-zero parts, or nothing.
fn overhead_parts(t: &cupel_chat::TrimTokens) -> String {
    let parts: Vec<String> = [
        (t.tools, "tool definitions"),
        (t.overhead - t.tools, "reply priming"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{} of {what}", cupel_chat::group_digits(n)))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}
