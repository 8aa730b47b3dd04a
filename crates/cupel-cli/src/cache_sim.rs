//! `cupel cache-sim FILE`: replay a transcript request by request under three
//! window strategies and bill every request with a provider's prompt cache;
//! and the cache-aware session behind `cupel chat --state FILE`.

use std::time::SystemTime;

use clap::Args;
use cupel_chat::{
    CacheProfile, CacheSession, ChatError, FileSessionStore, Granularity, LowWater, Planned,
    SessionState, SessionStore, SessionStoreError, SimStrategy, Simulation, Transcript, Trim,
    apply_breakpoints, request_ends, simulate_with,
};

use crate::chart::{LineChart, Series};
use crate::error::CliError;

pub(crate) const CACHE_SIM_AFTER_HELP: &str = "\
FILE is an OpenAI or Anthropic chat transcript. Every assistant message is
one model request: the messages before it. Each request is trimmed to
--max-tokens by three strategies and billed with the provider's prompt cache
(reads, writes and uncached tokens, in base input-token units):

  newest-messages  the newest messages that fit, starting on a user message,
                   recomputed every request (LangChain's trim_messages, last)
  chat-trim        `cupel chat`'s newest-turns trim, recomputed every request
  cache-aware      `cupel chat --state`: keeps the previous window and
                   appends; cuts once and deep when it no longer fits

--recall adds a fourth strategy, chat-recall: `cupel chat --recall`
recomputed every request (the newest turns up to --recall-share of the
budget, then the older messages most relevant to the request's newest user
message in one context message after the system prompt).

--age-tool-results K shortens tool results older than K exchanges in the two
Cupel strategies (chat-trim: in the unit at the cut; cache-aware: only when
it cuts, where the prefix is rewritten anyway); newest-messages never does.

A request a strategy cannot window (its newest exchange alone is over
--max-tokens, or the system prompt is) does not stop the replay: its row
says `failed`, nothing is sent or billed for it, and the next request finds
the cache as the last request sent left it. The failures are listed after
the totals (the first 10, then a count), the totals' `failed` column counts
them per strategy, and cache-sim then exits with the code `cupel chat`
gives that request (1), naming the first failure on stderr.

Examples:
  cupel cache-sim agent.json --max-tokens 40000 --provider anthropic
  cupel cache-sim agent.json --max-tokens 40000 --provider openai --plot cost.svg
  cupel cache-sim agent.json --max-tokens 40000 --age-tool-results 2 --totals";

#[derive(Debug, Args)]
pub(crate) struct CacheSimArgs {
    /// Chat transcript (JSON); `-` is stdin
    #[arg(value_name = "FILE")]
    input: String,

    /// The most input tokens a request may cost
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    max_tokens: i64,

    /// Cache profile: openai, openai-24h, anthropic, anthropic-1h or gemini
    #[arg(long, value_name = "PROVIDER", default_value = "anthropic")]
    provider: String,

    /// The cache-aware session's low-water mark in window tokens (default:
    /// from the profile's write price)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    low_water: Option<i64>,

    /// Draw the cost of every request for the three strategies as SVG
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<String>,

    /// Print only the totals, not one row per request
    #[arg(long)]
    totals: bool,

    /// Shorten tool results with at least K user messages after them (see
    /// below)
    #[arg(long, value_name = "K")]
    age_tool_results: Option<usize>,

    /// Size of a shortened tool result, in message tokens (default 200)
    #[arg(
        long,
        value_name = "N",
        requires = "age_tool_results",
        allow_negative_numbers = true
    )]
    truncate_results_to: Option<i64>,

    /// Replay the recall window too (strategy chat-recall; see below)
    #[arg(long)]
    recall: bool,

    /// The recall window's share of the conversation budget for the
    /// newest turns, in (0, 1] (default 0.5)
    #[arg(long, value_name = "SHARE", requires = "recall")]
    recall_share: Option<f64>,

    /// Also replay the compaction strategies with the offline digest
    /// summariser: the session with summaries (aware+summary),
    /// summarising on every request (summarize-every) and LangChain's
    /// middleware with its state (langchain-state)
    #[arg(long)]
    summarize: bool,

    /// The summary bound for --summarize, in tokens (default 512)
    #[arg(
        long,
        value_name = "N",
        requires = "summarize",
        allow_negative_numbers = true
    )]
    summary_max_tokens: Option<i64>,
}

fn profile(name: &str) -> Result<CacheProfile, CliError> {
    CacheProfile::from_name(name).ok_or_else(|| {
        CliError::input(format!("unknown cache profile `{name}`"))
            .hint("use openai, openai-24h, anthropic, anthropic-1h or gemini")
    })
}

pub(crate) fn map_cache_err(e: ChatError, input: &str) -> CliError {
    match e {
        // The session's turn fails as the chat trim does, with its hints.
        c @ (ChatError::PinnedOverBudget { .. } | ChatError::NothingFits { .. }) => {
            crate::chat::map_err(c, input)
        }
        c @ ChatError::SummaryReserve { .. } => CliError::selection(c.to_string())
            .hint("lower --summary-max-tokens, or raise --max-tokens"),
        ChatError::Request { ref source, .. } => request_error(&e, source, input),
        c @ (ChatError::Json { .. } | ChatError::Shape { .. }) => {
            CliError::input(format!("{input}: {c}"))
        }
        other => CliError::input(other.to_string()),
    }
}

/// The error of one request of a replay (`e`, a [`ChatError::Request`]
/// about `source`): its message, and the exit code `cupel chat` gives
/// `source` on that request's messages.
fn request_error(e: &ChatError, source: &ChatError, input: &str) -> CliError {
    let chat = crate::chat::map_err(source.clone(), input);
    let hint = match source {
        ChatError::NothingFits { .. } => Some(
            "raise --max-tokens: every request is replayed, so the budget must hold each request's newest exchange"
                .to_string(),
        ),
        ChatError::PinnedOverBudget { .. } => Some(
            "raise --max-tokens: the pinned prompts and the request overhead go with every request"
                .to_string(),
        ),
        _ => chat.hint,
    };
    CliError {
        message: e.to_string(),
        hint,
        code: chat.code,
        output: None,
    }
}

/// Failed requests listed one line each before the rest is only counted.
const FAILURES_LISTED: usize = 10;

/// The requests at least one strategy could not window, ascending.
fn failed_requests(sim: &Simulation) -> Vec<usize> {
    let mut turns: Vec<usize> = sim
        .runs
        .iter()
        .flat_map(|r| r.failures().map(|t| t.turn))
        .collect();
    turns.sort_unstable();
    turns.dedup();
    turns
}

/// `request` or `requests`.
fn requests(n: usize) -> &'static str {
    if n == 1 { "request" } else { "requests" }
}

/// The failed requests of `sim`, one line per request and error (the
/// strategies that failed it the same way named together), at most
/// [`FAILURES_LISTED`] lines, then how many more; empty when none failed.
fn failures_text(sim: &Simulation) -> String {
    if sim.failed() == 0 {
        return String::new();
    }
    let per: Vec<String> = sim
        .runs
        .iter()
        .map(|r| format!("{} {}", r.strategy, r.failed))
        .collect();
    let n = failed_requests(sim).len();
    let mut s = format!(
        "failed: {} in {n} {} (not sent, so billed nothing: {})\n",
        sim.failed(),
        requests(n),
        per.join(", ")
    );
    let rows = sim.runs.first().map_or(0, |r| r.turns.len());
    // (request, end, strategies, error), in request order.
    let mut lines: Vec<(usize, usize, Vec<&str>, String)> = Vec::new();
    for k in 0..rows {
        let start = lines.len();
        for r in &sim.runs {
            let Some(t) = r.turns.get(k) else { continue };
            let Some(why) = &t.failure else { continue };
            let why = why.to_string();
            match lines[start..].iter_mut().find(|l| l.3 == why) {
                Some(l) => l.2.push(r.strategy.as_str()),
                None => lines.push((t.turn, t.end, vec![r.strategy.as_str()], why)),
            }
        }
    }
    for (turn, end, strategies, why) in lines.iter().take(FAILURES_LISTED) {
        s.push_str(&format!(
            "  request {turn} (the first {end} messages), {}: {why}\n",
            strategies.join(", ")
        ));
    }
    if let [first, .., last] | [first @ last] = &lines[lines.len().min(FAILURES_LISTED)..] {
        s.push_str(&format!(
            "  ... and {} more lines, requests {} to {}\n",
            lines.len() - FAILURES_LISTED,
            first.0,
            last.0
        ));
    }
    s
}

fn read(input: &str) -> Result<String, CliError> {
    let text = if input == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .map_err(|e| CliError::input(format!("cannot read the transcript from stdin: {e}")))?;
        s
    } else {
        std::fs::read_to_string(input)
            .map_err(|e| CliError::input(format!("cannot read `{input}`: {e}")))?
    };
    Ok(text.trim_start_matches('\u{feff}').to_string())
}

/// The per-request table (a group row naming each strategy over its five
/// columns, then the column names, then a row per request) and the cache-aware
/// session's cuts.
fn per_request(s: &mut String, sim: &Simulation) {
    // A group row naming each strategy over its five columns, then the
    // column names.
    let mut group = format!("{:12}", "");
    for r in &sim.runs {
        group.push_str(&format!(" | {:<45}", r.strategy.as_str()));
    }
    s.push_str(group.trim_end());
    s.push('\n');
    s.push_str(&format!("{:>5} {:>6}", "req", "msgs"));
    for _ in &sim.runs {
        s.push_str(&format!(
            " | {:>8} {:>8} {:>8} {:>8} {:>9}",
            "window", "read", "written", "uncached", "cost"
        ));
    }
    s.push('\n');
    let rows = sim.runs.first().map_or(0, |r| r.turns.len());
    for k in 0..rows {
        let first = &sim.runs[0].turns[k];
        s.push_str(&format!("{:>5} {:>6}", first.turn, first.end));
        for r in &sim.runs {
            let t = &r.turns[k];
            if t.is_sent() {
                s.push_str(&format!(
                    " | {:>8} {:>8} {:>8} {:>8} {:>9.0}",
                    t.window_tokens, t.usage.read, t.usage.written, t.usage.uncached, t.cost
                ));
            } else {
                s.push_str(&format!(
                    " | {:>8} {:>8} {:>8} {:>8} {:>9}",
                    "failed", "-", "-", "-", "-"
                ));
            }
        }
        s.push('\n');
    }
    s.push_str(
        "\n(tokens; cost in base input tokens: uncached + write multiplier x written + read multiplier x read)\n\n",
    );
    if let Some(aware) = sim.run(SimStrategy::CacheAware) {
        for t in &aware.turns {
            if let Some(n) = t.note.as_deref().filter(|n| n.contains("removed")) {
                s.push_str(n);
                s.push('\n');
            }
        }
        s.push('\n');
    }
}

/// The cost of each request by strategy, as an SVG line chart at `path`.
fn plot(sim: &Simulation, max_tokens: i64, path: &str) -> Result<(), CliError> {
    let chart = LineChart {
        title: format!(
            "Cost per request ({}, max {} tokens)",
            sim.profile.name, max_tokens
        ),
        x_label: "request".into(),
        y_label: "cost (base input tokens)".into(),
        series: sim
            .runs
            .iter()
            .map(|r| Series {
                name: r.strategy.as_str().into(),
                // A failed request was not sent: no point.
                points: r
                    .turns
                    .iter()
                    .filter(|t| t.is_sent())
                    .map(|t| (t.turn as i64, t.cost.round() as i64))
                    .collect(),
            })
            .collect(),
    };
    chart.write_svg(path)
}

pub(crate) fn run(a: &CacheSimArgs) -> Result<String, CliError> {
    let name = if a.input == "-" {
        "<stdin>"
    } else {
        a.input.as_str()
    };
    if a.max_tokens <= 0 {
        return Err(CliError::input(format!(
            "--max-tokens must be positive, got {}",
            a.max_tokens
        )));
    }
    let profile = profile(&a.provider)?;
    let doc = Transcript::parse(&read(&a.input)?).map_err(|e| map_cache_err(e, name))?;
    let opts = Trim::new(doc.format(), a.max_tokens);
    let mut opts = match doc.tools() {
        Some(t) => opts.tools(t.clone()),
        None => opts,
    };
    if let Some(aging) = crate::chat::aging(a.age_tool_results, a.truncate_results_to)? {
        opts = opts.age_tool_results(aging);
    }
    if a.recall {
        let mut r = cupel_chat::RecallOptions::new();
        if let Some(share) = a.recall_share {
            r = r.newest_share(share);
        }
        opts = opts.recall(r);
    }
    let session_opts = opts.clone();
    if a.summarize {
        let mut c = cupel_chat::Compaction::new(cupel_chat::DigestSummarizer::new());
        if let Some(n) = a.summary_max_tokens {
            c = c
                .max_tokens(n)
                .map_err(|e| CliError::input(format!("--summary-max-tokens: {e}")))?;
        }
        opts = opts.summarize(c);
    }
    let mut session = CacheSession::new(session_opts, profile.clone());
    if let Some(l) = a.low_water {
        session = session.low_water(LowWater::Tokens(l));
    }
    let sim = simulate_with(doc.messages(), &opts, session).map_err(|e| map_cache_err(e, name))?;

    let mut s = format!(
        "cache-sim {name}: {}, {} messages, {} requests; max_tokens {}; profile {}\n\n",
        doc.format(),
        doc.messages().len(),
        sim.runs.first().map_or(0, |r| r.turns.len()),
        a.max_tokens,
        sim.profile
    );
    if !a.totals {
        per_request(&mut s, &sim);
    }
    s.push_str(&sim.totals_table());
    let failures = failures_text(&sim);
    if !failures.is_empty() {
        s.push('\n');
        s.push_str(&failures);
    }
    if let Some(path) = &a.plot {
        plot(&sim, a.max_tokens, path)?;
    }
    // The table is printed whole; then the first failed request is the
    // error, as `cupel chat` words it (chat-trim runs its trim; cache-aware
    // is `cupel chat --state`), with the exit code `cupel chat` gives it.
    let first = sim
        .runs
        .iter()
        .flat_map(|r| r.failures().map(move |t| (r.strategy, t)))
        .min_by_key(|(strategy, t)| {
            let rank = match strategy {
                SimStrategy::ChatTrim => 0,
                SimStrategy::CacheAware => 1,
                _ => 2,
            };
            (t.turn, rank)
        });
    if let Some((_, t)) = first
        && let (Some(e), Some(source)) = (t.error(), &t.failure)
    {
        let mut err = request_error(&e, source, name);
        if sim.failed() > 1 {
            let n = failed_requests(&sim).len();
            err.message.push_str(&format!(
                " ({} failures in {n} {}, listed above)",
                sim.failed(),
                requests(n)
            ));
        }
        return Err(err.with_output(s));
    }
    Ok(s)
}

/// How many times `cupel chat --state` re-plans a turn another process
/// committed first, before it gives up.
const STATE_ATTEMPTS: usize = 20;

/// The options of `cupel chat --state FILE`.
pub(crate) struct StateArgs<'a> {
    /// The state file.
    pub(crate) path: &'a str,
    /// `--reset-state`: forget the stored state first.
    pub(crate) reset: bool,
    /// `--explain`.
    pub(crate) explain: bool,
}

/// `cupel chat --state FILE`: the cache-aware window of `doc` given the
/// previous window in the state file (absent: the first turn); commits the
/// new state (compare-and-set under a lock, atomic rename) and returns the
/// request (with Anthropic `cache_control` markers) or, with `explain`, the
/// turn's explanation. A turn another process committed first is re-planned
/// from its state.
pub(crate) fn run_with_state(
    doc: &Transcript,
    opts: Trim,
    granularity: Option<Granularity>,
    state: &StateArgs<'_>,
    name: &str,
    compaction: Option<cupel_chat::Compaction>,
) -> Result<String, CliError> {
    let profile = CacheProfile::for_request(doc.format(), &doc.body_value());
    let opts = match doc.tools() {
        Some(t) => opts.tools(t.clone()),
        None => opts,
    };
    let store = FileSessionStore::single(state.path);
    if state.reset {
        store.remove("").map_err(|e| state_error(&e))?;
    }
    let model = doc
        .body_value()
        .get("model")
        .and_then(|m| m.as_str())
        .map(str::to_string);
    let planned = Planned::of(&opts, model.as_deref()).map_err(|e| map_cache_err(e, name))?;
    let run = StateRun {
        doc,
        opts,
        granularity,
        profile,
        store,
        state,
        planned,
        name,
        compaction,
    };
    let mut attempts = STATE_ATTEMPTS;
    loop {
        match run.turn() {
            Err(StateTurnError::Conflict(e)) if attempts > 1 => {
                attempts -= 1;
                let _ = e;
            }
            Err(StateTurnError::Conflict(e)) => return Err(state_error(&e)),
            Err(StateTurnError::Cli(e)) => return Err(e),
            Ok(out) => return Ok(out),
        }
    }
}

/// A turn lost to another process (re-planned), or an error to report.
enum StateTurnError {
    Conflict(SessionStoreError),
    Cli(CliError),
}

impl From<CliError> for StateTurnError {
    fn from(e: CliError) -> Self {
        StateTurnError::Cli(e)
    }
}

/// The error `cupel chat --state` reports for a state it cannot use.
fn state_error(e: &SessionStoreError) -> CliError {
    let err = CliError::input(e.to_string());
    match e {
        SessionStoreError::Conflict { .. } => {
            err.hint("other processes keep committing this conversation; run the turn again")
        }
        _ => err,
    }
}

/// What every attempt of a `cupel chat --state` turn shares.
struct StateRun<'a> {
    doc: &'a Transcript,
    opts: Trim,
    granularity: Option<Granularity>,
    profile: CacheProfile,
    store: FileSessionStore,
    state: &'a StateArgs<'a>,
    planned: Planned,
    name: &'a str,
    /// The running summary's compaction (`--summarize`), if any.
    compaction: Option<cupel_chat::Compaction>,
}

impl StateRun<'_> {
    /// One attempt: load, check, plan, commit.
    fn turn(&self) -> Result<String, StateTurnError> {
        let StateRun {
            doc,
            opts,
            granularity,
            profile,
            store,
            state,
            planned,
            name,
            compaction,
        } = self;
        let (granularity, name) = (*granularity, *name);
        let stored = store.load("").map_err(|e| state_error(&e))?;
        // Turns are numbered by the requests the transcript already holds, as
        // `cache-sim` numbers them.
        let turn = request_ends(doc.messages()).len() + 1;
        let mut session = CacheSession::new(opts.clone(), profile.clone()).turn_number(turn);
        if let Some(g) = granularity {
            session = session.granularity(g);
        }
        let expected = stored.as_ref().map(|s| s.version);
        if let Some(c) = compaction {
            let previous = match &stored {
                Some(s) => summary_of(s, state.path)?,
                None => None,
            };
            session = session.summarize(c.clone().previous(previous));
        }
        if let Some(prev) = &stored {
            if let Some(why) = prev.replan(planned, doc.messages()) {
                return Err(CliError::input(format!(
                "state `{}` does not belong to this request: {why}",
                state.path
            ))
            .hint("start this conversation's state afresh with --reset-state, or give another --state file")
            .into());
            }
            session = session.resume(
                prev.window_messages(state.path)
                    .map_err(|e| state_error(&e))?,
            );
            // What the previous turn counted and planned: checked against
            // the transcript before use, so only new messages are counted.
            if let Some(l) = &prev.ledger {
                session = session.resume_ledger(l.clone());
            }
            // The state file was written when the previous request was made:
            // its age is how long the provider's cache has sat unused. (A
            // modification time in the future, or none, counts as no wait.)
            let idle = std::fs::metadata(state.path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|written| SystemTime::now().duration_since(written).ok())
                .unwrap_or_default();
            session.idle(idle);
        }
        let turn = session
            .next(doc.messages())
            .map_err(|e| map_cache_err(e, name))?;
        // The window as sent, every kept message byte for byte as read, the
        // running summary (if any) after the pinned prefix.
        let mut window = doc.window(&turn.positions, &turn.shortened);
        if let Some(r) = &turn.summary
            && let Some(m) = &r.message
        {
            window.insert_message(r.at, m.clone());
        }
        let mut saved = SessionState::new(
            planned,
            turn.turn,
            SessionState::opening_of(doc.format(), doc.messages()),
            window.to_json(),
        );
        saved.ledger = session.ledger();
        if compaction.is_some() {
            let summary = serde_json::to_value(session.summary())
                .map_err(|e| CliError::input(format!("cannot write the running summary: {e}")))?;
            saved.extra.insert(SUMMARY_KEY.to_owned(), summary);
        }
        match store.commit("", expected, &saved) {
            Ok(_) => {}
            Err(e @ SessionStoreError::Conflict { .. }) => return Err(StateTurnError::Conflict(e)),
            Err(e) => return Err(state_error(&e).into()),
        }
        let out = state_output(&turn, &window, profile, state.explain);
        match crate::chat::summary_failure(turn.summary.as_ref()) {
            Some(e) => Err(e.with_output(out).into()),
            None => Ok(out),
        }
    }
}

/// The state's member holding the running summary (`--summarize`).
const SUMMARY_KEY: &str = "summary";

/// The running summary a state keeps, if any.
fn summary_of(
    state: &SessionState,
    path: &str,
) -> Result<Option<cupel_chat::RunningSummary>, CliError> {
    match state.extra.get(SUMMARY_KEY) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|e| {
            CliError::input(format!(
                "state `{path}`: its summary is not a running summary: {e}"
            ))
            .hint("start this conversation's state afresh with --reset-state")
        }),
    }
}

/// What `cupel chat --state` prints for a committed turn.
fn state_output(
    turn: &cupel_chat::CacheTurn<'_>,
    window: &Transcript,
    profile: &CacheProfile,
    explain: bool,
) -> String {
    if explain {
        let mut s = turn.explain();
        s.push('\n');
        s.push_str(&turn.rows_text());
        if turn.breakpoints.is_empty() {
            s.push_str("cache markers: none\n");
        } else {
            // Markers are prefix lengths of the window as sent: a marker at
            // b goes on its message b - 1 (an input position, or the summary).
            let sent = turn.sent_positions();
            let at: Vec<String> = turn
                .breakpoints
                .iter()
                .filter_map(|&b| sent.get(b.wrapping_sub(1)))
                .map(|p| p.map_or("the summary".to_string(), |p| format!("#{p}")))
                .collect();
            s.push_str(&format!("cache markers after {}\n", at.join(", ")));
        }
        return s;
    }
    let value = apply_breakpoints(window, &turn.breakpoints, profile);
    let mut s = window.json_of(&value);
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}
