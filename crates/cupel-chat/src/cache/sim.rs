//! [`simulate`]: replay a transcript request by request under three window
//! strategies and bill each request with a [`PromptCache`].

use std::fmt;

use crate::cache::profile::{CacheProfile, CacheUsage};
use crate::cache::prompt::{Block, Frame, PromptCache};
use crate::cache::session::{CacheSession, SUMMARY_KEEP_MESSAGES};
use crate::cache::suffix::{Composite, Suffixes};
use crate::compact::{Compaction, Folding, RunningSummary, SummaryReport, units};
use crate::error::ChatError;
use crate::message::{Message, Role};
use crate::trim::{Decision, Trim, trim};

/// A window strategy of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SimStrategy {
    /// What LangChain's `trim_messages(strategy="last", start_on="human",
    /// include_system=True)` does: the newest messages that fit, one
    /// message at a time, then leading messages dropped until a user
    /// message; the window is recomputed from the end every turn.
    NewestMessages,
    /// The chat crate's [`trim`] with the caller's options (newest units,
    /// tool groups whole, contiguous), recomputed every turn.
    ChatTrim,
    /// A [`CacheSession`] carried across the turns.
    CacheAware,
    /// The recall window ([`Trim::recall`]) recomputed every turn: the
    /// newest turns and a context message of recalled older turns right
    /// after the pinned prompts. Replayed only when the options carry
    /// recall (not in [`ALL`](Self::ALL)).
    ChatRecall,
    /// The same session with compaction ([`CacheSession::summarize`]):
    /// what its cuts remove is folded into a running summary after the
    /// pinned prefix, changed only at a cut. Run when the options carry a
    /// [`Compaction`](crate::Compaction) ([`Trim::summarize`]).
    CacheAwareSummary,
    /// Summarise on every request, in the style of LangChain's
    /// `SummarizationMiddleware` applied to the whole history each request:
    /// once the history is over the trigger (the budget, in tokens),
    /// everything but the newest 20 messages (its documented `keep`
    /// default, fewer when they do not fit; never starting at a tool
    /// result) is folded into the summary, so the summary and the front
    /// move with every request. Run when the options carry a
    /// [`Compaction`](crate::Compaction).
    SummarizeEvery,
    /// LangChain's `SummarizationMiddleware` with its state: the same
    /// trigger and keep, but after a summary the state holds only the
    /// summary and the kept messages, so the next trigger comes when they
    /// and the new messages exceed the budget (between triggers the prefix
    /// is stable). Run when the options carry a
    /// [`Compaction`](crate::Compaction).
    SummarizationMiddleware,
}

impl SimStrategy {
    /// All three, in the order the simulation reports them.
    pub const ALL: [SimStrategy; 3] = [
        SimStrategy::NewestMessages,
        SimStrategy::ChatTrim,
        SimStrategy::CacheAware,
    ];

    /// The two compaction strategies, run after [`ALL`](Self::ALL) when
    /// the options carry a [`Compaction`](crate::Compaction).
    pub const SUMMARY: [SimStrategy; 3] = [
        SimStrategy::CacheAwareSummary,
        SimStrategy::SummarizeEvery,
        SimStrategy::SummarizationMiddleware,
    ];

    /// `newest-messages`, `chat-trim`, `cache-aware`, `chat-recall`,
    /// `aware+summary`, `summarize-every`, `langchain-state`.
    pub fn as_str(self) -> &'static str {
        match self {
            SimStrategy::NewestMessages => "newest-messages",
            SimStrategy::ChatTrim => "chat-trim",
            SimStrategy::CacheAware => "cache-aware",
            SimStrategy::ChatRecall => "chat-recall",
            SimStrategy::CacheAwareSummary => "aware+summary",
            SimStrategy::SummarizeEvery => "summarize-every",
            SimStrategy::SummarizationMiddleware => "langchain-state",
        }
    }
}

impl fmt::Display for SimStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One request of one strategy: what it sent and was billed, or why it
/// could not be windowed.
#[derive(Debug, Clone, PartialEq)]
pub struct SimTurn {
    /// 1-based request number.
    pub turn: usize,
    /// The request holds the transcript's first `end` messages (the messages
    /// before assistant message number `turn`).
    pub end: usize,
    /// Messages in the window.
    pub window_messages: usize,
    /// The request's input tokens.
    pub window_tokens: i64,
    /// The transcript's tokens so far, had everything been sent.
    pub history_tokens: i64,
    /// The billing.
    pub usage: CacheUsage,
    /// Its price in base input tokens.
    pub cost: f64,
    /// The cache session's explanation (cache-aware strategy only).
    pub note: Option<String>,
    /// The low-water mark in effect (cache-aware strategy only, else 0).
    pub low_water: i64,
    /// Why the strategy could not window this request, `None` when it was
    /// sent: [`ChatError::NothingFits`] (its newest unit alone is over the
    /// budget), [`ChatError::PinnedOverBudget`] or
    /// [`ChatError::NoConversation`]. A failed request is not sent: its
    /// window (messages and tokens), usage and cost are 0, it adds nothing
    /// to the run's totals, and the next request finds the cache (and the
    /// cache-aware session its previous window) as the last request sent
    /// left it.
    pub failure: Option<ChatError>,
}

impl SimTurn {
    /// Whether the request was sent (it has no [`failure`](Self::failure)).
    pub fn is_sent(&self) -> bool {
        self.failure.is_none()
    }

    /// The failure as an error naming the request: a
    /// [`ChatError::Request`] with its number, its messages and why.
    ///
    /// ```
    /// use cupel_chat::{CacheProfile, Message, SimStrategy, Trim, simulate};
    /// // The second request's newest message alone (about 2,000 tokens) is
    /// // over the 1,000-token budget.
    /// let t = vec![
    ///     Message::user("Hi"),
    ///     Message::assistant("Hello."),
    ///     Message::user("word ".repeat(2_000)),
    ///     Message::assistant("That is long."),
    /// ];
    /// let sim = simulate(&t, &Trim::openai(1_000), &CacheProfile::openai())?;
    /// let chat = sim.run(SimStrategy::ChatTrim).unwrap();
    /// assert_eq!(chat.failed, 1);
    /// let e = chat.turns[1].error().unwrap().to_string();
    /// assert!(e.starts_with("request 2 (the first 3 messages) cannot be windowed: nothing fits"), "{e}");
    /// # Ok::<(), cupel_chat::ChatError>(())
    /// ```
    pub fn error(&self) -> Option<ChatError> {
        self.failure.clone().map(|source| ChatError::Request {
            request: self.turn,
            messages: self.end,
            source: Box::new(source),
        })
    }
}

/// One strategy's replay.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyRun {
    /// The strategy.
    pub strategy: SimStrategy,
    /// One row per request, failed ones included.
    pub turns: Vec<SimTurn>,
    /// The sum of the rows' usage (a failed request adds nothing).
    pub total: CacheUsage,
    /// The sum of the rows' cost (a failed request adds nothing).
    pub cost: f64,
    /// How many requests this strategy could not window (rows with a
    /// [`failure`](SimTurn::failure)). When it is not 0, the totals cover
    /// fewer requests than another strategy's may: compare them with care.
    pub failed: usize,
}

impl StrategyRun {
    /// The rows of the requests this strategy could not window.
    pub fn failures(&self) -> impl Iterator<Item = &SimTurn> {
        self.turns.iter().filter(|t| !t.is_sent())
    }
}

/// The three strategies replayed on one transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// The profile billing the requests.
    pub profile: CacheProfile,
    /// The budget.
    pub max_tokens: i64,
    /// One run per strategy, in [`SimStrategy::ALL`] order.
    pub runs: Vec<StrategyRun>,
}

impl Simulation {
    /// The run of `strategy`.
    pub fn run(&self, strategy: SimStrategy) -> Option<&StrategyRun> {
        self.runs.iter().find(|r| r.strategy == strategy)
    }

    /// Requests that could not be windowed, summed over the strategies.
    pub fn failed(&self) -> usize {
        self.runs.iter().map(|r| r.failed).sum()
    }

    /// The totals as a plain-text table, one line per strategy; the
    /// `failed` column counts the requests each could not window (billed
    /// nothing).
    pub fn totals_table(&self) -> String {
        let base = self
            .run(SimStrategy::NewestMessages)
            .map_or(0.0, |r| r.cost);
        let mut out = format!(
            "{:<16} {:>12} {:>12} {:>12} {:>12} {:>8} {:>14} {:>8} {:>7}\n",
            "strategy",
            "input",
            "uncached",
            "written",
            "read",
            "cached",
            "cost",
            "vs newest",
            "failed"
        );
        for r in &self.runs {
            let rel = if base > 0.0 { r.cost / base } else { 0.0 };
            out.push_str(&format!(
                "{:<16} {:>12} {:>12} {:>12} {:>12} {:>7.1}% {:>14.0} {:>8.1}% {:>7}\n",
                r.strategy.as_str(),
                r.total.total(),
                r.total.uncached,
                r.total.written,
                r.total.read,
                r.total.read_share() * 100.0,
                r.cost,
                rel * 100.0,
                r.failed
            ));
        }
        out
    }
}

/// The requests of a transcript: for each assistant message, the number of
/// messages before it, when those include a non-prompt message.
///
/// ```
/// use cupel_chat::{Message, request_ends};
/// let t = [Message::system("s"), Message::user("a"), Message::assistant("b"),
///          Message::user("c"), Message::assistant("d")];
/// assert_eq!(request_ends(&t), vec![2, 4]);
/// ```
pub fn request_ends(messages: &[Message]) -> Vec<usize> {
    let mut seen_conversation = false;
    let mut ends = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if m.role == Role::Assistant && seen_conversation {
            ends.push(i);
        }
        if !m.role.is_prompt() {
            seen_conversation = true;
        }
    }
    ends
}

struct Sender {
    cache: PromptCache,
    frame: Frame,
    prev: Vec<u64>,
    prev_bps: Vec<usize>,
}

impl Sender {
    fn send(&mut self, blocks: &[Block], pinned: usize) -> CacheUsage {
        let lcp = self
            .prev
            .iter()
            .zip(blocks)
            .take_while(|(a, b)| **a == b.hash)
            .count();
        let reuse_at = self.prev_bps.iter().copied().filter(|&b| b <= lcp).max();
        let (bps, usage) = self.frame.send(&mut self.cache, blocks, pinned, reuse_at);
        self.prev = blocks.iter().map(|b| b.hash).collect();
        self.prev_bps = bps;
        usage
    }
}

/// Replays `messages` request by request (see [`request_ends`]) with the
/// budget and rules of `opts`, under the three [`SimStrategy`]s (and
/// [`SimStrategy::ChatRecall`] fourth when `opts` carry
/// [`recall`](Trim::recall); the other three then run without it), billing
/// every request with a [`PromptCache`] of `profile`; every strategy places
/// Anthropic markers with the same [`plan_breakpoints`](crate::plan_breakpoints).
///
/// A request a strategy cannot window (its newest unit alone over the
/// budget, the pinned prompts over it, no conversation message left) does
/// not stop the replay: its row carries the [`ChatError`] in
/// [`SimTurn::failure`], nothing is sent or billed for it (window, usage and
/// cost 0), the next request of that strategy finds the cache as the last
/// request sent left it, and [`StrategyRun::failed`] counts it.
///
/// ```
/// use cupel_chat::{CacheProfile, Message, SimStrategy, Trim, simulate};
/// let mut t = vec![Message::system("You are a helpful assistant.")];
/// for i in 0..6 {
///     t.push(Message::user(format!("Question {i}")));
///     t.push(Message::assistant(format!("Answer {i}")));
/// }
/// let sim = simulate(&t, &Trim::openai(1_000), &CacheProfile::openai())?;
/// assert_eq!(sim.runs.len(), 3);
/// assert_eq!(sim.run(SimStrategy::CacheAware).unwrap().turns.len(), 6);
/// assert_eq!(sim.failed(), 0);
/// # Ok::<(), cupel_chat::ChatError>(())
/// ```
///
/// # Errors
/// [`ChatError::NoRequests`] when there is nothing to replay;
/// the trim's own errors when the whole transcript cannot be counted (an
/// unknown encoding, a pinned prompt that makes a tool call, a budget that
/// is not positive); [`ChatError::Request`] (naming the request) when
/// [`trim`] or [`CacheSession::next`] refuses one for another reason than
/// its window; the session's own errors (an invalid low-water mark) as
/// they are.
pub fn simulate(
    messages: &[Message],
    opts: &Trim,
    profile: &CacheProfile,
) -> Result<Simulation, ChatError> {
    simulate_with(
        messages,
        opts,
        CacheSession::new(opts.clone(), profile.clone()),
    )
}

/// The error of request `k` (0-based), which ends before message `end`.
fn at(k: usize, end: usize, source: ChatError) -> ChatError {
    ChatError::Request {
        request: k + 1,
        messages: end,
        source: Box::new(source),
    }
}

/// Whether `e` says the request cannot be windowed (a row of the replay),
/// rather than that the input or the options are wrong (the replay stops).
fn is_window_failure(e: &ChatError) -> bool {
    matches!(
        e,
        ChatError::NothingFits { .. }
            | ChatError::PinnedOverBudget { .. }
            | ChatError::NoConversation { .. }
    )
}

/// [`simulate`] with a session of the caller's (low-water mark,
/// granularity); its profile bills all three strategies.
///
/// The session numbers its turns as it was told (by default from 1); after
/// a request it cannot window, its next turn is numbered as if that request
/// had taken one, so its notes keep the simulation's request numbers.
///
/// # Errors
/// As [`simulate`].
pub fn simulate_with(
    messages: &[Message],
    opts: &Trim,
    session: CacheSession,
) -> Result<Simulation, ChatError> {
    replay(messages, opts, session, true)
}

/// [`simulate_with`]; `recent_ends` trims requests from their recent end
/// where that shows the window (`suffix`), else every request whole (the
/// tests replay both ways).
fn replay(
    messages: &[Message],
    opts: &Trim,
    mut session: CacheSession,
    recent_ends: bool,
) -> Result<Simulation, ChatError> {
    let profile = session.profile().clone();
    let ends = request_ends(messages);
    if ends.is_empty() {
        return Err(ChatError::NoRequests {
            messages: messages.len(),
            assistant: messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count(),
        });
    }
    let max = opts.max_tokens();
    if max <= 0 {
        return Err(ChatError::InvalidBudget { max_tokens: max });
    }
    let compaction = opts.compaction.clone();
    let mut plain = opts.clone();
    plain.compaction = None;
    let opts = &plain;
    // The compacting session: the caller's, before its first turn, with
    // the compaction.
    let mut summary_session = compaction.clone().map(|c| session.clone().summarize(c));
    let unlimited = opts
        .clone()
        .without_recall()
        .with_max_tokens(i64::MAX / 4)
        .report(false);
    let full = trim(messages, &unlimited)?;
    let tokens: Vec<i64> = full.rows.iter().map(|r| r.tokens).collect();
    let pinned_at: Vec<bool> = full
        .rows
        .iter()
        .map(|r| r.decision == Decision::Pinned)
        .collect();
    let blocks: Vec<Block> = messages
        .iter()
        .zip(&tokens)
        .map(|(m, &t)| Block::of(m, t, opts.format()))
        .collect();
    let suffixes = recent_ends
        .then(|| suffixes(messages, &unlimited, &tokens, &session))
        .flatten();
    let replay = Replay {
        messages,
        ends: &ends,
        suffixes: suffixes.as_ref(),
        history: prefix_sums(full.tokens.overhead, &tokens),
        pinned: (0..messages.len()).filter(|&i| pinned_at[i]).collect(),
        tokens: &tokens,
        pinned_at: &pinned_at,
        blocks: &blocks,
        overhead: full.tokens.overhead,
        frame: Frame::new(opts.tools.as_ref(), &full.tokens),
        per_turn: opts.clone().without_recall().report(false),
        recall_turn: opts.clone().report(false),
        profile: &profile,
        max,
        compaction: compaction.as_ref(),
    };
    let mut runs = Vec::new();
    let recall = opts.recall_options().map(|_| SimStrategy::ChatRecall);
    for strategy in SimStrategy::ALL.into_iter().chain(recall) {
        runs.push(replay.run(strategy, &mut session)?);
    }
    if let Some(s) = summary_session.as_mut() {
        for strategy in SimStrategy::SUMMARY {
            runs.push(replay.run(strategy, s)?);
        }
    }
    Ok(Simulation {
        profile,
        max_tokens: max,
        runs,
    })
}

/// The replay's suffixes (see `suffix`), from the whole transcript's
/// unlimited trims with the task pinned and not, in the session's units; `None` when either fails
/// (every request is then trimmed whole).
fn suffixes(
    messages: &[Message],
    unlimited: &Trim,
    tokens: &[i64],
    session: &CacheSession,
) -> Option<Suffixes> {
    // The session's units (its granularity): what its unit numbers count.
    let units = unlimited.clone().granularity(session.unit_granularity());
    let with = trim(messages, &units.clone().pin_first_user(true)).ok()?;
    let without = trim(messages, &units.pin_first_user(false)).ok()?;
    Some(Suffixes::new(messages, unlimited, tokens, &with, &without))
}

/// `out[i]`: `base` plus the tokens before `i`.
fn prefix_sums(base: i64, tokens: &[i64]) -> Vec<i64> {
    let mut out = Vec::with_capacity(tokens.len() + 1);
    let mut t = base;
    out.push(t);
    for &x in tokens {
        t = t.saturating_add(x);
        out.push(t);
    }
    out
}

/// Requests windowed from their recent end (the tests check it happens).
#[cfg(test)]
static RECENT_HITS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Session turns planned from the ledger's roll (tests only).
#[cfg(test)]
pub(crate) static RECENT_TURNS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// One replay of a transcript's requests: what every strategy shares.
struct Replay<'a> {
    messages: &'a [Message],
    ends: &'a [usize],
    /// Where a request may be trimmed from its recent end (see `suffix`).
    suffixes: Option<&'a Suffixes>,
    /// `history[end]`: the request overhead and the tokens before `end`.
    history: Vec<i64>,
    /// The pinned positions (the whole transcript's trim), ascending.
    pinned: Vec<usize>,
    tokens: &'a [i64],
    pinned_at: &'a [bool],
    blocks: &'a [Block],
    overhead: i64,
    frame: Frame,
    per_turn: Trim,
    /// The recall window's options (`per_turn` with recall).
    recall_turn: Trim,
    profile: &'a CacheProfile,
    max: i64,
    compaction: Option<&'a Compaction>,
}

/// A request's window: its positions, usage, note, low-water mark, and
/// the tokens and messages it sends besides those positions (a recall
/// window's context message).
type Windowed = (Vec<usize>, CacheUsage, Option<String>, i64, (i64, usize));

impl Replay<'_> {
    /// Every request under `strategy`; a request that cannot be windowed is
    /// a failed row, any other error ends the replay.
    fn run(
        &self,
        strategy: SimStrategy,
        session: &mut CacheSession,
    ) -> Result<StrategyRun, ChatError> {
        let mut sender = Sender {
            cache: PromptCache::new(self.profile.clone()),
            frame: self.frame,
            prev: Vec::new(),
            prev_bps: Vec::new(),
        };
        let mut turns = Vec::with_capacity(self.ends.len());
        let (mut total, mut cost, mut failed) = (CacheUsage::default(), 0.0, 0usize);
        // The cache-aware session's last turn: (request index, its number).
        let mut last_turn: Option<(usize, usize)> = None;
        let mut summary: (Option<RunningSummary>, usize) = (None, 0);
        // The session's last window: its pinned positions and its first
        // conversation message.
        let mut front: Option<(Vec<usize>, usize)> = None;
        // The previous request's composite (`suffix`), updated in place.
        let mut roll: Option<Composite> = None;
        for (k, &end) in self.ends.iter().enumerate() {
            let windowed = match strategy {
                SimStrategy::NewestMessages => self.newest(end, &mut sender),
                SimStrategy::ChatTrim => self.chat_trim(k, end, &mut sender, false, &mut roll)?,
                SimStrategy::ChatRecall => self.chat_trim(k, end, &mut sender, true, &mut roll)?,
                SimStrategy::SummarizeEvery => {
                    self.summarize_every(k, end, &mut sender, &mut summary, false)?
                }
                SimStrategy::SummarizationMiddleware => {
                    self.summarize_every(k, end, &mut sender, &mut summary, true)?
                }
                SimStrategy::CacheAware | SimStrategy::CacheAwareSummary => {
                    let request = &self.messages[..end];
                    let recent = (strategy == SimStrategy::CacheAware)
                        .then(|| self.suffix_turn(end, session, front.as_ref(), &mut roll))
                        .flatten();
                    if let Some((windowed, turn)) = recent {
                        last_turn = Some((k, turn));
                        front = self.front(end, &windowed.0);
                        Ok(windowed)
                    } else {
                        match session.next_whole(request) {
                            Ok(t) => {
                                last_turn = Some((k, t.turn));
                                front = self.front(end, &t.positions);
                                let extra = t.summary.as_ref().map_or(0, SummaryReport::tokens);
                                Ok((
                                    t.positions.clone(),
                                    t.usage,
                                    Some(t.explain()),
                                    t.low_water,
                                    (extra, usize::from(extra > 0)),
                                ))
                            }
                            Err(e) if is_window_failure(&e) => {
                                // This request takes a number; the next one the one after.
                                let next = match last_turn {
                                    Some((k0, t0)) => t0 + (k - k0) + 1,
                                    None => k + 2,
                                };
                                session.set_turn_number(next);
                                Err(e)
                            }
                            // The session's own options: not about this request.
                            Err(
                                e @ (ChatError::InvalidLowWaterFraction { .. }
                                | ChatError::InvalidLowWater { .. }),
                            ) => return Err(e),
                            Err(e) => return Err(at(k, end, e)),
                        }
                    }
                }
            };
            let row = self.row(k, end, windowed);
            if row.failure.is_some() {
                failed += 1;
            }
            total += row.usage;
            cost += row.cost;
            turns.push(row);
        }
        Ok(StrategyRun {
            strategy,
            turns,
            total,
            cost,
            failed,
        })
    }

    /// The newest-messages baseline's window for the request ending at `end`.
    fn newest(&self, end: usize, sender: &mut Sender) -> Result<Windowed, ChatError> {
        let request = &self.messages[..end];
        let pinned = &self.pinned[..self.pinned.partition_point(|&p| p < end)];
        newest_messages(
            request,
            self.tokens,
            (self.pinned_at, pinned),
            self.overhead,
            self.max,
        )
        .map(|positions| {
            let win: Vec<Block> = positions.iter().map(|&p| self.blocks[p]).collect();
            let pinned = positions.iter().filter(|&&p| self.pinned_at[p]).count();
            let u = sender.send(&win, pinned);
            (positions, u, None, 0, (0, 0))
        })
    }

    /// The LangChain-style summarising strategy for request `k` (ending at
    /// `end`): `state` is the summary and the front the middleware's
    /// state holds after its last summary.
    fn summarize_every(
        &self,
        k: usize,
        end: usize,
        sender: &mut Sender,
        state: &mut (Option<RunningSummary>, usize),
        stateful: bool,
    ) -> Result<Result<Windowed, ChatError>, ChatError> {
        let Some(c) = self.compaction else {
            return Ok(Err(ChatError::InvalidBudget {
                max_tokens: self.max,
            }));
        };
        let request = &self.messages[..end];
        let unlimited = self.per_turn.clone().with_max_tokens(i64::MAX / 4);
        let full = match trim(request, &unlimited) {
            Ok(f) => f,
            Err(e) if is_window_failure(&e) => return Ok(Err(e)),
            Err(e) => return Err(at(k, end, e)),
        };
        let pinned: Vec<usize> = full
            .positions
            .iter()
            .copied()
            .filter(|&p| self.pinned_at[p])
            .collect();
        let conv: Vec<usize> = full
            .positions
            .iter()
            .copied()
            .filter(|&p| !self.pinned_at[p])
            .collect();
        let sum = |ps: &[usize]| {
            ps.iter()
                .fold(0i64, |a, &p| a.saturating_add(self.tokens[p]))
        };
        let fixed = self.overhead.saturating_add(sum(&pinned));
        // The middleware's state: the summary, then the messages from the
        // front on (stateless: the whole history every request).
        let front = if stateful { state.1 } else { 0 };
        let mut first = conv.partition_point(|&p| p < front);
        let now = if stateful {
            state.0.as_ref().map_or(0, RunningSummary::tokens)
        } else {
            0
        };
        let mut report = None;
        if fixed
            .saturating_add(now)
            .saturating_add(sum(&conv[first..]))
            > self.max
        {
            // The trigger: keep the newest 20 messages (fewer when they do
            // not fit), starting where no tool result loses its call.
            let starts = |i: usize| {
                let m = &request[conv[i]];
                m.answered_ids().next().is_none() && !m.is_tool_result()
            };
            let room = self.max - fixed - c.max_tokens;
            let mut cut = conv.len().saturating_sub(SUMMARY_KEEP_MESSAGES).max(first);
            while cut < conv.len() && (!starts(cut) || sum(&conv[cut..]) > room) {
                cut += 1;
            }
            if cut >= conv.len() {
                let newest = conv.last().copied().unwrap_or(0);
                return Ok(Err(ChatError::NothingFits {
                    position: newest,
                    label: request[newest].label(),
                    last_position: newest,
                    unit_messages: 1,
                    whole_conversation: conv.len() == 1,
                    unit_tokens: conv.last().map_or(0, |&p| self.tokens[p]),
                    available_tokens: room,
                }));
            }
            // Folded: the previous summary and what left since it was made.
            let after = state.0.as_ref().and_then(|s| s.through);
            let new = conv[..cut].partition_point(|&p| after.is_some_and(|t| p <= t));
            let evicted = units(request, &conv[new..cut], |_| None);
            let folding = Folding {
                format: self.per_turn.format(),
                counter: self.per_turn.make_counter()?,
                pinned: pinned.iter().map(|&p| request[p].clone()).collect(),
                compaction: c,
                previous: state.0.clone(),
                evicted_tokens: sum(&conv[new..cut]),
                evicted,
                turn: Some(k + 1),
                at: pinned.len(),
            };
            let r = folding.run();
            // A fold that failed leaves the summary (the next takes them again).
            *state = (r.summary.clone(), conv[cut]);
            first = cut;
            report = Some(r);
        }
        let (blocks, extra) = self.summarized_blocks(&pinned, state.0.as_ref(), &conv[first..]);
        let u = sender.send(&blocks, pinned.len());
        let positions: Vec<usize> = pinned
            .into_iter()
            .chain(conv[first..].iter().copied())
            .collect();
        let note = report.map(|r| r.to_string());
        Ok(Ok((positions, u, note, 0, (extra, usize::from(extra > 0)))))
    }

    /// The blocks of a window of the `pinned` messages, the `summary`'s
    /// message and the messages at `rest`; the summary's tokens.
    fn summarized_blocks(
        &self,
        pinned: &[usize],
        summary: Option<&RunningSummary>,
        rest: &[usize],
    ) -> (Vec<Block>, i64) {
        let format = self.per_turn.format();
        let pins: Vec<Message> = pinned.iter().map(|&p| self.messages[p].clone()).collect();
        let mut blocks: Vec<Block> = pinned.iter().map(|&p| self.blocks[p]).collect();
        let extra = summary.map_or(0, RunningSummary::tokens);
        if let Some(m) = summary.map(|s| s.message(format, &pins)) {
            blocks.push(Block::of(&m, extra, format));
        }
        blocks.extend(rest.iter().map(|&p| self.blocks[p]));
        (blocks, extra)
    }

    /// The chat trim's (or with `recall`, the recall window's) window for
    /// request `k` (ending at `end`); `Err` of the outer result ends the
    /// replay.
    fn chat_trim(
        &self,
        k: usize,
        end: usize,
        sender: &mut Sender,
        recall: bool,
        roll: &mut Option<Composite>,
    ) -> Result<Result<Windowed, ChatError>, ChatError> {
        let opts = if recall {
            &self.recall_turn
        } else {
            &self.per_turn
        };
        if !recall && let Some((positions, pinned)) = self.suffix_trim(end, opts, roll) {
            let win: Vec<Block> = positions.iter().map(|&p| self.blocks[p]).collect();
            let u = sender.send(&win, pinned);
            return Ok(Ok((positions, u, None, 0, (0, 0))));
        }
        match trim(&self.messages[..end], opts) {
            Ok(out) => {
                let mut win: Vec<Block> = out.positions.iter().map(|&p| self.blocks[p]).collect();
                // The pinned prefix: the prompts, and a pinned task.
                let pinned = out.rows.iter().filter(|r| r.decision.is_pinned()).count();
                let mut extra = (0, 0);
                if let Some((at, m)) = out.recall_message() {
                    let t = out.tokens.recalled;
                    win.insert(at.min(win.len()), Block::of(m, t, opts.format()));
                    extra = (t, 1);
                }
                let u = sender.send(&win, pinned);
                Ok(Ok((out.positions, u, None, 0, extra)))
            }
            Err(e) if is_window_failure(&e) => Ok(Err(e)),
            Err(e) => Err(at(k, end, e)),
        }
    }

    /// The chat trim's window of the request ending at `end` (input
    /// positions) and its pinned count, trimmed from the request's recent
    /// end when that shows the window (`suffix`): the fill stopped at a
    /// unit that did not fit after the boundary. `None`: trim it whole.
    fn suffix_trim(
        &self,
        end: usize,
        opts: &Trim,
        roll: &mut Option<Composite>,
    ) -> Option<(Vec<usize>, usize)> {
        let suffixes = self.suffixes?;
        // Twice the budget behind the newest message first; ageing may keep
        // more than the budget's worth of whole tokens, so then four times.
        for need in [self.max, self.max.saturating_mul(4)] {
            let c = suffixes.composite(self.messages, (end, need, end), roll)?;
            let Ok(out) = trim(&c.messages, &opts.clone().pin_first_user(c.task_pinned)) else {
                return None;
            };
            if out
                .rows
                .iter()
                .any(|r| matches!(r.decision, Decision::DoesNotFit { .. }))
            {
                let pinned = out.rows.iter().filter(|r| r.decision.is_pinned()).count();
                #[cfg(test)]
                RECENT_HITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Some((
                    out.positions.iter().map(|&i| c.positions[i]).collect(),
                    pinned,
                ));
            }
        }
        None
    }

    /// The cache-aware session's turn for the request ending at `end`, from
    /// the request's recent end (`suffix`): the composite starts at or
    /// before the previous window's first conversation message, its pins
    /// are the previous window's, and the session found its previous window
    /// in it. `session` moves on only then; `None`: run the whole request.
    fn suffix_turn(
        &self,
        end: usize,
        session: &mut CacheSession,
        previous: Option<&(Vec<usize>, usize)>,
        roll: &mut Option<Composite>,
    ) -> Option<(Windowed, usize)> {
        let (pins, front) = previous?;
        let suffixes = self.suffixes?;
        let c = suffixes.composite(self.messages, (end, 0, *front), roll)?;
        if &suffixes.pins(end) != pins {
            return None;
        }
        session.recent_end = Some((c.unit_base, c.task_pinned));
        let found = session.next_found(&c.messages);
        session.recent_end = None;
        // A failed turn leaves the session as it was: the whole request
        // then fails (or not) as it would.
        let t = found.ok().flatten()?;
        #[cfg(test)]
        RECENT_HITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let extra = t.summary.as_ref().map_or(0, SummaryReport::tokens);
        let windowed = (
            t.positions.iter().map(|&i| c.positions[i]).collect(),
            t.usage,
            Some(t.explain()),
            t.low_water,
            (extra, usize::from(extra > 0)),
        );
        Some((windowed, t.turn))
    }

    /// The pinned positions of the request ending at `end` and the first
    /// conversation position of its window `positions` (`None` without
    /// suffixes or a conversation message).
    fn front(&self, end: usize, positions: &[usize]) -> Option<(Vec<usize>, usize)> {
        let pins = self.suffixes?.pins(end);
        let first = positions
            .iter()
            .copied()
            .find(|p| pins.binary_search(p).is_err())?;
        Some((pins, first))
    }

    /// Request `k`'s row: billed when windowed, failed (nothing sent) when not.
    fn row(&self, k: usize, end: usize, windowed: Result<Windowed, ChatError>) -> SimTurn {
        let history = self.history[end];
        match windowed {
            Ok((positions, usage, note, low_water, (extra_tokens, extra_messages))) => SimTurn {
                turn: k + 1,
                end,
                window_messages: positions.len() + extra_messages,
                window_tokens: positions
                    .iter()
                    .fold(self.overhead, |a, &p| a.saturating_add(self.tokens[p]))
                    .saturating_add(extra_tokens),
                history_tokens: history,
                usage,
                cost: self.profile.cost(&usage),
                note,
                low_water,
                failure: None,
            },
            Err(e) => SimTurn {
                turn: k + 1,
                end,
                window_messages: 0,
                window_tokens: 0,
                history_tokens: history,
                usage: CacheUsage::default(),
                cost: 0.0,
                note: None,
                low_water: 0,
                failure: Some(e),
            },
        }
    }
}

/// The LangChain-style baseline: pinned prompts, then the newest messages
/// that fit the budget one by one (stopping at the first that does not),
/// then leading messages dropped until a user message that is not a tool
/// result. A window with no conversation message left is refused as the
/// chat trim refuses it: the pinned prompts and `overhead` over `max`
/// ([`ChatError::PinnedOverBudget`]), not even the newest message fits
/// ([`ChatError::NothingFits`]), or every message that fits was dropped to
/// start on a user message ([`ChatError::NoConversation`]).
fn newest_messages(
    request: &[Message],
    tokens: &[i64],
    (pinned_at, pinned): (&[bool], &[usize]),
    overhead: i64,
    max: i64,
) -> Result<Vec<usize>, ChatError> {
    let pinned = pinned.to_vec();
    let pinned_tokens = pinned
        .iter()
        .fold(0i64, |a, &i| a.saturating_add(tokens[i]));
    let fixed = overhead.saturating_add(pinned_tokens);
    if fixed > max {
        return Err(ChatError::PinnedOverBudget {
            pinned_tokens,
            overhead_tokens: overhead,
            total: fixed,
            max_tokens: max,
        });
    }
    let available = max - fixed;
    let mut left = available;
    let mut kept: Vec<usize> = Vec::new();
    for i in (0..request.len()).rev() {
        if pinned_at[i] {
            continue;
        }
        if tokens[i] > left {
            break;
        }
        left -= tokens[i];
        kept.push(i);
    }
    kept.reverse();
    let skip = kept
        .iter()
        .take_while(|&&i| request[i].role != Role::User || request[i].is_tool_result())
        .count();
    let conversation = request.len() - pinned.len();
    if skip == kept.len() {
        if kept.is_empty()
            && let Some(newest) = (0..request.len()).rev().find(|&i| !pinned_at[i])
        {
            return Err(ChatError::NothingFits {
                position: newest,
                label: request[newest].label(),
                last_position: newest,
                unit_messages: 1,
                whole_conversation: conversation == 1,
                unit_tokens: tokens[newest],
                available_tokens: available,
            });
        }
        return Err(ChatError::NoConversation {
            messages: conversation,
            orphans: 0,
            provider_rules: kept.len(),
            budget: conversation - kept.len(),
        });
    }
    Ok(pinned
        .into_iter()
        .chain(kept.into_iter().skip(skip))
        .collect())
}

#[cfg(test)]
mod recent_end_tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::{AgeToolResults, CacheTurn, Granularity, Transcript};

    /// One step of a generated conversation.
    #[derive(Debug, Clone)]
    enum Step {
        User(usize),
        Assistant(usize),
        /// `n` parallel calls; `answered` of them get a result, `late` of
        /// those only after the next user message.
        Calls {
            n: usize,
            answered: usize,
            late: bool,
        },
        System(usize),
        /// An Anthropic user turn of results and text (OpenAI: results then a user).
        Mixed(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (1usize..60).prop_map(Step::User),
            4 => (1usize..60).prop_map(Step::Assistant),
            4 => (1usize..3, 0usize..3, proptest::bool::weighted(0.1))
                .prop_map(|(n, a, late)| Step::Calls { n, answered: a.min(n), late }),
            1 => (1usize..20).prop_map(Step::System),
            2 => (1usize..40).prop_map(Step::Mixed),
        ]
    }

    fn words(k: usize, n: usize) -> String {
        (0..n)
            .map(|i| format!("w{}", (k * 7 + i) % 23))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The steps as an OpenAI (`anthropic == false`) or Anthropic document.
    fn document(steps: &[Step], anthropic: bool) -> String {
        let mut msgs: Vec<Value> = Vec::new();
        let mut late: Vec<Value> = Vec::new();
        let mut id = 0usize;
        for (k, s) in steps.iter().enumerate() {
            match s {
                Step::User(n) => {
                    msgs.push(json!({"role": "user", "content": words(k, *n)}));
                    msgs.append(&mut late);
                }
                Step::Assistant(n) => {
                    msgs.push(json!({"role": "assistant", "content": words(k, *n)}))
                }
                Step::System(n) if !anthropic => {
                    msgs.push(json!({"role": "system", "content": words(k, *n)}));
                }
                Step::System(n) => msgs.push(json!({"role": "user", "content": words(k, *n)})),
                Step::Calls {
                    n,
                    answered,
                    late: is_late,
                } => {
                    let ids: Vec<String> = (0..*n).map(|i| format!("call_{}", id + i)).collect();
                    id += n;
                    let mut results = Vec::new();
                    if anthropic {
                        let uses: Vec<Value> = ids.iter().map(|i| json!({"type": "tool_use", "id": i, "name": "f", "input": {"q": words(k, 3)}})).collect();
                        msgs.push(json!({"role": "assistant", "content": uses}));
                        let blocks: Vec<Value> = ids[..*answered].iter().map(|i| json!({"type": "tool_result", "tool_use_id": i, "content": words(k, 30)})).collect();
                        if !blocks.is_empty() {
                            results.push(json!({"role": "user", "content": blocks}));
                        }
                    } else {
                        let calls: Vec<Value> = ids.iter().map(|i| json!({"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}})).collect();
                        msgs.push(
                            json!({"role": "assistant", "content": null, "tool_calls": calls}),
                        );
                        for i in &ids[..*answered] {
                            results.push(
                                json!({"role": "tool", "tool_call_id": i, "content": words(k, 30)}),
                            );
                        }
                    }
                    if *is_late {
                        late.extend(results)
                    } else {
                        msgs.extend(results)
                    }
                }
                Step::Mixed(n) => {
                    let i = format!("call_{id}");
                    id += 1;
                    if anthropic {
                        msgs.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "f", "input": {}}]}));
                        msgs.push(json!({"role": "user", "content": [
                            {"type": "tool_result", "tool_use_id": i, "content": words(k, 20)},
                            {"type": "text", "text": words(k, *n)}]}));
                    } else {
                        msgs.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}));
                        msgs.push(
                            json!({"role": "tool", "tool_call_id": i, "content": words(k, 20)}),
                        );
                        msgs.push(json!({"role": "user", "content": words(k, *n)}));
                    }
                }
            }
        }
        msgs.push(json!({"role": "assistant", "content": "end"}));
        if anthropic {
            json!({"model": "claude-sonnet-4-5", "system": "Be brief.", "messages": msgs})
                .to_string()
        } else {
            let mut all = vec![json!({"role": "system", "content": "Be brief."})];
            all.extend(msgs);
            Value::Array(all).to_string()
        }
    }

    /// The first difference between two replays, if any (readable where a
    /// whole `Debug` is not).
    fn first_difference(
        a: &Result<Simulation, ChatError>,
        b: &Result<Simulation, ChatError>,
    ) -> Option<String> {
        let (Ok(a), Ok(b)) = (a, b) else {
            return (format!("{a:?}") != format!("{b:?}")).then(|| format!("{a:?}\n{b:?}"));
        };
        for (ra, rb) in a.runs.iter().zip(&b.runs) {
            for (ta, tb) in ra.turns.iter().zip(&rb.turns) {
                if ta != tb {
                    return Some(format!("{:?}\nwhole:  {ta:?}\nrecent: {tb:?}", ra.strategy));
                }
            }
        }
        (a != b).then(|| "totals differ".to_string())
    }

    /// A generated case: the document, its transcript and the trim options
    /// (`max` tokens, granularity message / exchange / turn, pin the task
    /// no / yes / by default, results aged after one exchange or not).
    fn case(
        steps: &[Step],
        anthropic: bool,
        (max, granularity, pin, aging): (i64, usize, usize, bool),
    ) -> (String, Transcript, Trim) {
        let doc = document(steps, anthropic);
        let t = Transcript::parse(&doc).unwrap();
        let mut opts = Trim::new(t.format(), max).granularity(
            [
                Granularity::Message,
                Granularity::Exchange,
                Granularity::Turn,
            ][granularity],
        );
        if pin < 2 {
            opts = opts.pin_first_user(pin == 1);
        }
        if aging {
            opts = opts.age_tool_results(AgeToolResults::new(1));
        }
        (doc, t, opts)
    }

    /// `steps` as a one-task agent loop: the first user message stays, later
    /// user messages and mixed turns become calls (nothing but tool traffic
    /// and the assistant's notes follows the task).
    fn one_task(steps: &[Step]) -> Vec<Step> {
        let mut seen = false;
        steps
            .iter()
            .map(|s| match s {
                Step::User(_) if !seen => {
                    seen = true;
                    s.clone()
                }
                Step::User(n) | Step::Mixed(n) => Step::Calls {
                    n: 1 + n % 2,
                    answered: 1 + n % 2,
                    late: false,
                },
                _ => s.clone(),
            })
            .collect()
    }

    /// A one-task agent loop: the task, then 150 rounds of calls, results
    /// and now and then a note from the assistant.
    fn agent_loop() -> Vec<Step> {
        std::iter::once(Step::User(20))
            .chain((0..150).flat_map(|k| {
                let calls = Step::Calls {
                    n: 1 + k % 2,
                    answered: 1 + k % 2,
                    late: false,
                };
                if k % 5 == 4 {
                    vec![calls, Step::Assistant(8)]
                } else {
                    vec![calls]
                }
            }))
            .collect()
    }

    /// 120 exchanges, each a question, one or two answered calls and a reply.
    fn long_conversation() -> Vec<Step> {
        (0..120)
            .flat_map(|k| {
                [
                    Step::User(10 + k % 7),
                    Step::Calls {
                        n: 1 + k % 2,
                        answered: 1 + k % 2,
                        late: false,
                    },
                    Step::Assistant(12),
                ]
            })
            .collect()
    }

    /// A long agent-style conversation takes the recent-end path for both
    /// the chat trim and the session, and replays as the whole requests do.
    #[test]
    fn a_long_conversation_is_replayed_from_recent_ends() {
        let steps = long_conversation();
        for anthropic in [false, true] {
            let t = Transcript::parse(&document(&steps, anthropic)).unwrap();
            let opts = Trim::new(t.format(), 900);
            let profile = CacheProfile::anthropic();
            let before = RECENT_HITS.load(std::sync::atomic::Ordering::Relaxed);
            let session = || CacheSession::new(opts.clone(), profile.clone());
            let recent = replay(t.messages(), &opts, session(), true).unwrap();
            let hits = RECENT_HITS.load(std::sync::atomic::Ordering::Relaxed) - before;
            // 120 requests (one per assistant reply after the calls and one
            // per closing reply: 240), most of them past the first window.
            assert!(hits > 200, "only {hits} requests took the recent end");
            let whole = replay(t.messages(), &opts, session(), false).unwrap();
            if let Some(d) = first_difference(&Ok(whole), &Ok(recent.clone())) {
                panic!("{d}");
            }
            assert_eq!(recent.failed(), 0);
        }
    }

    /// Serves every request of `messages` to a session turn by turn with
    /// [`CacheSession::next`] (which plans a grown transcript from its
    /// recent end) and to another planning each whole request; the first
    /// turn that differs (window, rows, notes, failure), if any, and how
    /// many turns took the recent end.
    fn incremental_against_whole(
        messages: &[Message],
        opts: &Trim,
        edit: Option<usize>,
        appended: bool,
    ) -> (Option<String>, usize) {
        let profile = CacheProfile::anthropic();
        let mut inc = CacheSession::new(opts.clone(), profile.clone());
        let mut whole = CacheSession::new(opts.clone(), profile);
        let mut edited = messages.to_vec();
        let mut recent = 0;
        for (k, &end) in request_ends(messages).iter().enumerate() {
            // An older message edited halfway: the ledger must notice.
            if edit.is_some_and(|e| e < end && k == request_ends(messages).len() / 2) {
                let e = edit.unwrap_or(0);
                edited[e] = Message::user(format!("edited {e}"));
            }
            let request = &edited[..end];
            // Now and then the cache expires between two requests.
            if k % 7 == 3 {
                let idle = std::time::Duration::from_secs(600);
                assert_eq!(inc.idle(idle), whole.idle(idle));
            }
            let before = RECENT_TURNS.load(std::sync::atomic::Ordering::Relaxed);
            let a = if appended && k % 2 == 1 {
                inc.next_appended(request)
            } else {
                inc.next(request)
            };
            recent += RECENT_TURNS.load(std::sync::atomic::Ordering::Relaxed) - before;
            let b = whole.next_whole(request);
            let show = |t: &Result<CacheTurn<'_>, ChatError>| match t {
                Ok(t) => format!("{t:?}\n{t}\n{}", t.rows_text()),
                Err(e) => format!("{e:?}"),
            };
            let (sa, sb) = (show(&a), show(&b));
            if sa != sb {
                return (
                    Some(format!(
                        "request {k} (end {end}):\nincremental: {sa}\nwhole:       {sb}"
                    )),
                    recent,
                );
            }
        }
        (None, recent)
    }

    /// Two calls answered late (after later user messages) join their
    /// exchanges into one unit when the results arrive, so the previous
    /// window's first message no longer starts a unit. Exchange 1 was cut
    /// at turn 5; turn 9 must not count it again, whether planned whole or
    /// from the recent end.
    #[test]
    fn late_results_do_not_bring_back_what_an_earlier_turn_cut() {
        use Step::{Assistant, Calls, Mixed, User};
        let late = Calls {
            n: 1,
            answered: 1,
            late: true,
        };
        let steps = vec![
            User(46),
            Assistant(22),
            User(28),
            Assistant(25),
            late.clone(),
            Mixed(39),
            late,
            Assistant(39),
            Mixed(23),
            Assistant(1),
            User(1),
        ];
        let (_, t, opts) = case(&steps, false, (277, 0, 0, false));
        let profile = CacheProfile::anthropic();
        let mut inc = CacheSession::new(opts.clone(), profile.clone());
        let mut whole = CacheSession::new(opts, profile);
        let mut last = String::new();
        for &end in &request_ends(t.messages()) {
            let r = &t.messages()[..end];
            let (a, b) = (inc.next(r), whole.next_whole(r));
            let show = |x: &Result<CacheTurn<'_>, ChatError>| match x {
                Ok(t) => format!("{t}\n{}", t.rows_text()),
                Err(e) => e.to_string(),
            };
            assert_eq!(show(&a), show(&b));
            last = show(&a);
        }
        // Turn 9 keeps #0 and exchange 4 (#15-#17). What the turn had:
        // the system prompt 7, exchanges 2-3 (#3-#14) 452, exchange 4 140,
        // reply priming 3: 7 + 452 + 140 + 3 = 602. Exchange 1 (#1-#2,
        // 144 tokens) went at turn 5.
        assert!(
            last.contains("window reached 602 of 277; removed exchanges 2–3 (452 tokens)"),
            "{last}"
        );
        assert!(
            last.contains("#1–#2: 2 messages removed by earlier turns' cuts"),
            "{last}"
        );
    }

    /// A long conversation: most turns take the recent end, and every turn
    /// is the whole request's.
    #[test]
    fn a_session_plans_a_grown_transcript_from_its_recent_end() {
        let steps = long_conversation();
        for anthropic in [false, true] {
            let t = Transcript::parse(&document(&steps, anthropic)).unwrap();
            let opts = Trim::new(t.format(), 900);
            let (diff, recent) = incremental_against_whole(t.messages(), &opts, None, true);
            assert_eq!(diff, None);
            // 240 requests; the first windows, and the turns where the
            // previous window starts before any boundary, plan whole.
            assert!(recent > 200, "only {recent} turns took the recent end");
        }
    }

    /// A one-task agent loop has no user message after its task, so its
    /// boundaries lie between tool groups: most turns take the recent end
    /// (at message granularity), and every turn is the whole request's.
    #[test]
    fn a_one_task_agent_loop_is_planned_from_its_recent_end() {
        let steps = agent_loop();
        for anthropic in [false, true] {
            let t = Transcript::parse(&document(&steps, anthropic)).unwrap();
            let opts = Trim::new(t.format(), 900);
            let (diff, recent) = incremental_against_whole(t.messages(), &opts, None, true);
            assert_eq!(diff, None);
            let requests = request_ends(t.messages()).len();
            // One request per result message and per note: 150 groups and
            // 30 notes. Only the first windows, before the transcript
            // outgrows 900 tokens, should plan whole.
            assert!(
                recent * 10 > requests * 8,
                "only {recent} of {requests} turns took the recent end"
            );
            let profile = CacheProfile::anthropic();
            let session = || CacheSession::new(opts.clone(), profile.clone());
            let before = RECENT_HITS.load(std::sync::atomic::Ordering::Relaxed);
            let fast = replay(t.messages(), &opts, session(), true).unwrap();
            let hits = RECENT_HITS.load(std::sync::atomic::Ordering::Relaxed) - before;
            assert!(
                hits * 10 > requests * 8,
                "only {hits} replays took the recent end"
            );
            let slow = replay(t.messages(), &opts, session(), false).unwrap();
            if let Some(d) = first_difference(&Ok(slow), &Ok(fast)) {
                panic!("{d}");
            }
        }
    }

    prop_compose! {
        /// A generated case's inputs: the steps (a one-task agent loop in
        /// three cases of ten), the format, and `case`'s options.
        fn any_case()(
            steps in proptest::collection::vec(step(), 1..50),
            anthropic in any::<bool>(),
            max in 60i64..900,
            granularity in 0usize..3,
            pin in 0usize..3,
            aging in any::<bool>(),
            loop_only in proptest::bool::weighted(0.3),
        ) -> (Vec<Step>, bool, (i64, usize, usize, bool)) {
            let steps = if loop_only { one_task(&steps) } else { steps };
            (steps, anthropic, (max, granularity, pin, aging))
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// A session's turns on a transcript that grows are the whole
        /// requests' turns, byte for byte (rows and notes included), for
        /// both formats, every granularity, pins and ageing; an edit to an
        /// older message re-plans.
        #[test]
        fn incremental_turns_are_whole_turns(
            (steps, anthropic, options) in any_case(),
            edit in proptest::option::weighted(0.3, 0usize..40),
            appended in any::<bool>(),
        ) {
            let (doc, t, opts) = case(&steps, anthropic, options);
            // `next_appended` on every other turn when nothing is edited.
            let appended = appended && edit.is_none();
            let (diff, _) = incremental_against_whole(t.messages(), &opts, edit, appended);
            if let Some(d) = diff {
                prop_assert!(false, "{}\n{}", d, doc);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        /// Replaying requests from their recent end gives what replaying
        /// them whole gives: every strategy's windows, usage, notes and
        /// failures, for both formats, every granularity, pins and ageing.
        #[test]
        fn recent_ends_replay_as_whole_requests((steps, anthropic, options) in any_case()) {
            let (doc, t, opts) = case(&steps, anthropic, options);
            let profile = CacheProfile::anthropic();
            let session = || CacheSession::new(opts.clone(), profile.clone());
            let whole = replay(t.messages(), &opts, session(), false);
            let recent = replay(t.messages(), &opts, session(), true);
            if let Some(d) = first_difference(&whole, &recent) {
                prop_assert!(false, "{}\n{}", d, doc);
            }
        }
    }
}
