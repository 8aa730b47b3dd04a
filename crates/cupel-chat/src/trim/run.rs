//! The trim's engine: named phases over one run state.
//!
//! `count` → `pin` → `pair` → `group` → `fill` → `repair` → `finish`:
//!
//! * **count**: each message's tokens, and its *pieces*. A message is one
//!   piece, except an Anthropic user turn that carries tool results and
//!   new text (a [mixed turn](Message::is_mixed_turn)): its results are one
//!   piece (they belong to the previous assistant's tool group), the rest
//!   another (it starts the next exchange).
//! * **pin**: system prompts, and the task (the first user message) when
//!   asked or when it is the transcript's only user message.
//! * **pair**: tool groups (a call and every result answering it, by id;
//!   legacy `function_call` / `function` messages by name), orphans, and
//!   the notes on input that breaks a provider rule itself.
//! * **group**: units by granularity (message, exchange, turn).
//! * **fill**: the newest units that fit, contiguous (old tool results
//!   shortened first when ageing is on).
//! * **repair**: the provider's start rule and the caller's end rule.
//! * **recall** (a recall window only, `recall`): the fill again with the
//!   newest share as its cap, then the older units ranked by BM25 and the
//!   best written into one context message.
//! * **finish**: one row per message, the kept messages and their forms.
//!
//! A new provider rule is a change to `repair`; a new kind of unit a
//! change to `group`; nothing else needs to know.

mod recall;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::report::TrimReport;
use super::{
    Decision, Granularity, Half, InputNote, MessageRow, PieceRow, Trim, TrimTokens, Trimmed,
    TurnHalf,
};
use crate::count::MessageCounter;
use crate::error::ChatError;
use crate::message::{Message, Part, Role};
use crate::wire::{Format, kind_of};

/// A piece: a whole message, or one half of a mixed turn.
#[derive(Debug, Clone, Copy)]
struct Piece {
    msg: usize,
    half: Half,
    tokens: i64,
}

/// Union-find over pieces.
struct Dsu(Vec<usize>);

impl Dsu {
    fn new(n: usize) -> Self {
        Dsu((0..n).collect())
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // The smaller index is the root: roots are first members.
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.0[hi] = lo;
        }
    }
}

/// One unit: its first and last piece, how many pieces, their tokens.
pub(super) struct Unit {
    pub first: usize,
    pub last: usize,
    pub len: usize,
    pub tokens: i64,
}

/// A call as a result names it: by id, or (legacy) by function name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum CallKey<'a> {
    Id(&'a str),
    Legacy(&'a str),
}

/// What a failed trim knows: the error, and the rows made before it.
pub(crate) struct Failed<'a> {
    pub error: ChatError,
    pub rows: Vec<MessageRow<'a>>,
}

impl From<ChatError> for Failed<'_> {
    fn from(error: ChatError) -> Self {
        Failed {
            error,
            rows: Vec::new(),
        }
    }
}

/// The state of one trim.
struct Run<'a, 'o> {
    messages: &'a [Message],
    opts: &'o Trim,
    counter: Arc<dyn MessageCounter>,
    /// Each message's tokens (whole).
    tokens: Vec<i64>,
    pieces: Vec<Piece>,
    /// Each message's first piece.
    first_piece: Vec<usize>,
    /// A mixed turn's two halves as messages, with their tokens.
    halves: BTreeMap<usize, [(Message, i64); 2]>,
    /// Each message's pin (`Pinned` / `PinnedTask`).
    pin: Vec<Option<Decision>>,
    /// Decisions made before the fill (orphans), by piece.
    early: Vec<Option<Decision>>,
    /// Orphan reason of each piece (also when orphans are kept).
    orphan: Vec<Option<Decision>>,
    dsu: Dsu,
    notes: Vec<InputNote>,
    units: Vec<Unit>,
    unit_of: Vec<Option<usize>>,
    unit_decision: Vec<Option<Decision>>,
    /// Units kept, in input order after `repair`.
    kept_units: Vec<usize>,
    /// The step each unit is kept at (0: whole), when ageing.
    unit_step: Vec<usize>,
    /// Aged forms, by message.
    forms: Vec<Vec<(Message, i64)>>,
    overhead: i64,
    tools_tokens: i64,
    available: i64,
    /// The newest units' cap (a recall window's newest share), if any.
    cap: Option<i64>,
    /// What a recall window recalled.
    recalled: Option<super::Recall>,
    /// The pinned messages' roles (empty texts), which decide the form of
    /// a recall window's context message.
    pinned_roles: Vec<Message>,
}

/// Trims `messages` (see [`trim`](super::trim)), keeping the rows made
/// when it fails.
pub(crate) fn run<'a>(messages: &'a [Message], opts: &Trim) -> Result<Trimmed<'a>, Failed<'a>> {
    if opts.max_tokens <= 0 {
        return Err(ChatError::InvalidBudget {
            max_tokens: opts.max_tokens,
        }
        .into());
    }
    check_tools(opts.tools.as_ref())?;
    if let Some(r) = &opts.recall {
        recall::check(r)?;
        if opts.compaction.is_some() {
            return Err(ChatError::RecallWithSummary.into());
        }
    }
    let counter = opts.make_counter()?;
    let mut run = Run::count(messages, opts, counter);
    run.pin()?;
    run.pair();
    run.group();
    run.budget()?;
    run.fill()?;
    run.repair();
    if let Some(r) = &opts.recall {
        run.recall(r)?;
    }
    run.finish()
}

impl<'a, 'o> Run<'a, 'o> {
    /// Phase `count`: tokens, pieces and the request overhead.
    fn count(messages: &'a [Message], opts: &'o Trim, counter: Arc<dyn MessageCounter>) -> Self {
        let n = messages.len();
        // Each message in its place (an estimate may count a message by
        // where it sits, e.g. thinking before the last user message).
        let tokens: Vec<i64> = counter
            .count_messages(messages)
            .into_iter()
            .map(|t| t.max(0))
            .collect();
        let mut pieces = Vec::with_capacity(n);
        let mut first_piece = Vec::with_capacity(n);
        let mut halves = BTreeMap::new();
        for (i, m) in messages.iter().enumerate() {
            first_piece.push(pieces.len());
            if m.is_mixed_turn() {
                // The text half is counted as the message it is sent as;
                // the results half is the rest, so the halves add up.
                let text = m.half(false);
                let text_tokens = counter.count_message(&text).clamp(0, tokens[i]);
                let results = m.half(true);
                let results_tokens = tokens[i] - text_tokens;
                pieces.push(Piece {
                    msg: i,
                    half: Half::Results,
                    tokens: results_tokens,
                });
                pieces.push(Piece {
                    msg: i,
                    half: Half::Text,
                    tokens: text_tokens,
                });
                halves.insert(i, [(results, results_tokens), (text, text_tokens)]);
            } else {
                pieces.push(Piece {
                    msg: i,
                    half: Half::Whole,
                    tokens: tokens[i],
                });
            }
        }
        let overhead = counter.count_request(opts.tools.as_ref()).max(0);
        let tools_tokens = if opts.tools.is_some() {
            overhead
                .saturating_sub(counter.count_request(None))
                .clamp(0, overhead)
        } else {
            0
        };
        let p = pieces.len();
        Run {
            messages,
            opts,
            counter,
            tokens,
            dsu: Dsu::new(p),
            early: vec![None; p],
            orphan: vec![None; p],
            unit_of: vec![None; p],
            pieces,
            first_piece,
            halves,
            pin: vec![None; n],
            notes: Vec::new(),
            units: Vec::new(),
            unit_decision: Vec::new(),
            kept_units: Vec::new(),
            unit_step: Vec::new(),
            forms: Vec::new(),
            overhead,
            tools_tokens,
            available: 0,
            cap: None,
            recalled: None,
            pinned_roles: Vec::new(),
        }
    }

    /// Phase `pin`: system prompts (refusing one in tool traffic) and the task.
    fn pin(&mut self) -> Result<(), ChatError> {
        for (i, m) in self.messages.iter().enumerate() {
            if !(self.opts.pin_system && m.role.is_prompt()) {
                continue;
            }
            let traffic = m
                .answered_ids()
                .next()
                .map(|id| ("answers", id))
                .or_else(|| m.calls().next().map(|c| ("makes", c.id.as_str())));
            if let Some((action, id)) = traffic {
                return Err(ChatError::PinnedToolTraffic {
                    position: i,
                    label: m.label(),
                    action,
                    call_id: id.to_string(),
                });
            }
            self.pin[i] = Some(Decision::Pinned);
        }
        if let Some((task, automatic)) = self.task() {
            self.pin[task] = Some(Decision::PinnedTask { automatic });
        }
        for p in 0..self.pieces.len() {
            if let Some(d) = &self.pin[self.pieces[p].msg] {
                self.early[p] = Some(d.clone());
            }
        }
        Ok(())
    }

    /// The task to pin, and whether it is pinned automatically: the first
    /// user message without tool traffic, when asked
    /// ([`Trim::pin_first_user`]) or, by default, when it is the only user
    /// message and tool calls follow it (a one-task agent loop).
    fn task(&self) -> Option<(usize, bool)> {
        let is_user = |m: &Message| m.role == Role::User && !m.is_tool_result();
        let first = self
            .messages
            .iter()
            .position(|m| is_user(m) && m.answered_ids().next().is_none())?;
        match self.opts.pin_first_user {
            Some(pin) => pin.then_some((first, false)),
            // A one-task agent loop: the only user message, answered by
            // tool traffic. (A chat's first turn, one user message and no
            // tool call yet, is left as it is.)
            None => {
                let users = self.messages.iter().filter(|m| is_user(m)).count();
                let tools_after = self.messages[first..]
                    .iter()
                    .any(|m| m.calls().next().is_some() || m.legacy_call().is_some());
                (users == 1 && tools_after).then_some((first, true))
            }
        }
    }

    /// The calls a piece makes.
    fn calls_of(&self, p: usize) -> Vec<CallKey<'a>> {
        let piece = self.pieces[p];
        if piece.half != Half::Whole {
            return Vec::new();
        }
        let m: &'a Message = &self.messages[piece.msg];
        let mut out: Vec<CallKey<'a>> = m.calls().map(|c| CallKey::Id(c.id.as_str())).collect();
        if let Some((name, _)) = m.legacy_call() {
            out.push(CallKey::Legacy(name));
        }
        out
    }

    /// The calls a piece answers; `Err` describes a malformed result.
    fn answers_of(&self, p: usize) -> Result<Vec<CallKey<'a>>, String> {
        let piece = self.pieces[p];
        let m: &'a Message = &self.messages[piece.msg];
        match piece.half {
            Half::Text => Ok(Vec::new()),
            _ if m.is_legacy_result() => match m.name.as_deref() {
                Some(name) => Ok(vec![CallKey::Legacy(name)]),
                None => Err("a function result without the `name` of its function".into()),
            },
            _ if m.role == Role::Tool && m.tool_call_id.is_none() => {
                Err(match (m.extra.get("tool_call_id"), m.extra.get("tool_call_ids")) {
                    (Some(v), _) => format!("its `tool_call_id` is {}", describe(v)),
                    (None, Some(_)) => {
                        "it has `tool_call_ids` (a list) but no `tool_call_id`, the only field OpenAI reads".into()
                    }
                    (None, None) => "it has no `tool_call_id`".into(),
                })
            }
            _ => Ok(m
                .content
                .parts()
                .iter()
                .filter_map(|p| match p {
                    Part::ToolResult(r) => Some(CallKey::Id(r.call_id.as_str())),
                    _ => None,
                })
                .chain(m.tool_call_id.as_deref().map(CallKey::Id))
                .collect()),
        }
    }

    /// Phase `pair`: tool groups, orphans and notes on the input.
    fn pair(&mut self) {
        let n = self.pieces.len();
        // A result answers the latest earlier piece making its call (ids
        // can repeat); `bound` holds each (maker, call) that got an answer.
        let mut owner: BTreeMap<CallKey<'a>, usize> = BTreeMap::new();
        let mut bound: BTreeSet<(usize, CallKey<'a>)> = BTreeSet::new();
        // Messages before each position that a result may not reach over:
        // anything but tool results (OpenAI), anything at all (Anthropic).
        let mut barriers = Vec::with_capacity(self.messages.len() + 1);
        barriers.push(0usize);
        for m in self.messages {
            let barrier = crate::formats::separates_call_and_result(self.opts.format, m);
            barriers.push(barriers.last().copied().unwrap_or(0) + usize::from(barrier));
        }
        let mut reused: BTreeSet<CallKey<'a>> = BTreeSet::new();
        for p in 0..n {
            if self.pin[self.pieces[p].msg].is_some() {
                continue;
            }
            let msg = self.pieces[p].msg;
            match self.answers_of(p) {
                Err(found) => self.orphan[p] = Some(Decision::MalformedResult { found }),
                Ok(keys) => {
                    for key in keys {
                        match owner.get(&key) {
                            Some(&o) => {
                                self.dsu.union(o, p);
                                bound.insert((o, key));
                                let call_msg = self.pieces[o].msg;
                                // Messages strictly between the call and the result.
                                if barriers[msg] - barriers[call_msg + 1] > 0 {
                                    self.notes.push(InputNote::DistantResult {
                                        call_id: key_text(key),
                                        call_position: call_msg,
                                        result_position: msg,
                                    });
                                }
                            }
                            None if self.orphan[p].is_none() => {
                                self.orphan[p] = Some(Decision::OrphanResult {
                                    call_id: key_text(key),
                                });
                            }
                            None => {}
                        }
                    }
                }
            }
            for key in self.calls_of(p) {
                if let Some(&earlier) = owner.get(&key)
                    && matches!(key, CallKey::Id(id) if !crate::formats::made_up_id(self.opts.format, id))
                    && reused.insert(key)
                {
                    self.notes.push(InputNote::ReusedCallId {
                        call_id: key_text(key),
                        first_position: self.pieces[earlier].msg,
                        second_position: msg,
                    });
                }
                owner.insert(key, p);
            }
        }
        self.bind_followers();
        for p in 0..n {
            if self.orphan[p].is_none()
                && self.pin[self.pieces[p].msg].is_none()
                && let Some(key) = self
                    .calls_of(p)
                    .into_iter()
                    .find(|k| !bound.contains(&(p, *k)))
            {
                self.orphan[p] = Some(Decision::UnansweredCall {
                    call_id: key_text(key),
                });
            }
        }
        if self.opts.keep_orphans {
            return;
        }
        // Orphans take their whole tool group with them.
        let mut orphan_root: BTreeMap<usize, usize> = BTreeMap::new();
        for p in 0..n {
            if self.orphan[p].is_some() {
                let r = self.dsu.find(p);
                orphan_root.entry(r).or_insert(self.pieces[p].msg);
            }
        }
        for p in 0..n {
            if self.early[p].is_some() {
                continue;
            }
            let r = self.dsu.find(p);
            if let Some(&o) = orphan_root.get(&r) {
                self.early[p] = Some(match &self.orphan[p] {
                    Some(d) => d.clone(),
                    None => Decision::WithOrphan { position: o },
                });
            }
        }
    }

    /// Part of `pair`: an item that moves with the next one (a Responses
    /// `reasoning` item, parallel call items) joins its piece; one that
    /// needs a next item and has none is an orphan.
    fn bind_followers(&mut self) {
        use crate::formats::{binds_to_next, needs_next};
        let format = self.opts.format;
        for i in 0..self.messages.len() {
            let m = &self.messages[i];
            if self.pin[i].is_some() {
                continue;
            }
            let next = self
                .messages
                .get(i + 1)
                .filter(|_| self.pin[i + 1].is_none());
            match next {
                Some(n) if binds_to_next(format, m, n) => {
                    self.dsu.union(self.first_piece[i], self.first_piece[i + 1]);
                }
                None if needs_next(format, m) => {
                    self.orphan[self.first_piece[i]] = Some(Decision::WithoutFollower {
                        kind: m.role.to_string(),
                    });
                }
                _ => {}
            }
        }
    }

    /// Phase `group`: units of the pieces left, by granularity.
    fn group(&mut self) {
        let side = |run: &Self, p: usize| -> u8 {
            let piece = run.pieces[p];
            let m = &run.messages[piece.msg];
            let user = match piece.half {
                Half::Text => true,
                Half::Results => false,
                Half::Whole => m.role == Role::User && !m.is_tool_result(),
            };
            u8::from(!user)
        };
        // The task's tail: the pieces after a pinned task and before the
        // next user piece. The task's exchange (or the assistant's turn
        // answering it) cannot move whole, its user message being pinned,
        // so each of its messages is a unit of its own, tool groups whole,
        // as at message granularity: a one-task agent loop is one long
        // tail (`spec/13-clarifications.md`, "The tail of a pinned task").
        let mut tail = false;
        let mut prev: Option<usize> = None;
        for p in 0..self.pieces.len() {
            if matches!(
                self.pin[self.pieces[p].msg],
                Some(Decision::PinnedTask { .. })
            ) {
                tail = true;
            }
            if self.early[p].is_some() {
                continue;
            }
            if side(self, p) == 0 {
                tail = false;
            }
            if let Some(q) = prev {
                let joins = match self.opts.granularity {
                    Granularity::Message => false,
                    _ if tail => false,
                    Granularity::Exchange => side(self, p) != 0,
                    Granularity::Turn => side(self, p) == side(self, q),
                };
                if joins {
                    self.dsu.union(q, p);
                }
            }
            prev = Some(p);
        }
        // Units in input order of their first piece (a root is its set's
        // smallest index, so the first piece seen is the root).
        let mut unit_of_root = vec![usize::MAX; self.pieces.len()];
        for p in 0..self.pieces.len() {
            if self.early[p].is_some() {
                continue;
            }
            let r = self.dsu.find(p);
            if unit_of_root[r] == usize::MAX {
                self.units.push(Unit {
                    first: p,
                    last: p,
                    len: 0,
                    tokens: 0,
                });
                unit_of_root[r] = self.units.len() - 1;
            }
            let u = unit_of_root[r];
            let unit = &mut self.units[u];
            unit.last = p;
            unit.len += 1;
            unit.tokens = unit.tokens.saturating_add(self.pieces[p].tokens);
            self.unit_of[p] = Some(u);
        }
        self.unit_decision = vec![None; self.units.len()];
    }

    /// The tokens always sent: pinned messages and the request overhead.
    fn pinned_tokens(&self) -> i64 {
        (0..self.messages.len())
            .filter(|&i| self.pin[i].is_some())
            .map(|i| self.tokens[i])
            .fold(0i64, i64::saturating_add)
    }

    /// What the conversation may spend; refuses pins over the budget.
    fn budget(&mut self) -> Result<(), Failed<'a>> {
        let pinned = self.pinned_tokens();
        let fixed = pinned.saturating_add(self.overhead);
        if fixed > self.opts.max_tokens {
            let rows = self.pinned_rows();
            return Err(Failed {
                error: ChatError::PinnedOverBudget {
                    pinned_tokens: pinned,
                    overhead_tokens: self.overhead,
                    total: fixed,
                    max_tokens: self.opts.max_tokens,
                },
                rows,
            });
        }
        self.available = self.opts.max_tokens - fixed;
        Ok(())
    }

    /// Rows of the pinned messages only, as a failed trim reports them.
    fn pinned_rows(&self) -> Vec<MessageRow<'a>> {
        (0..self.messages.len())
            .filter_map(|i| {
                self.pin[i].clone().map(|decision| MessageRow {
                    position: i,
                    message: &self.messages[i],
                    tokens: self.tokens[i],
                    unit: None,
                    decision,
                    granularity: self.opts.granularity,
                })
            })
            .collect()
    }

    /// A unit's pieces (for ageing).
    fn members(&self) -> Vec<Vec<usize>> {
        let mut members = vec![Vec::new(); self.units.len()];
        for (p, u) in self.unit_of.iter().enumerate() {
            if let Some(u) = u {
                members[*u].push(p);
            }
        }
        members
    }

    /// The tokens of piece `p` at ageing step `step` (0: whole).
    fn piece_tokens_at(&self, p: usize, step: usize) -> i64 {
        let piece = self.pieces[p];
        let forms = match self.forms.get(piece.msg) {
            Some(f) if step > 0 && !f.is_empty() && piece.half != Half::Text => f,
            _ => return piece.tokens,
        };
        let t = forms[step.min(forms.len()) - 1].1;
        match piece.half {
            // The results half is the message minus its text half.
            Half::Results => {
                let text = self.halves.get(&piece.msg).map_or(0, |h| h[1].1);
                t.saturating_sub(text).max(0)
            }
            _ => t,
        }
    }

    /// Phase `fill`: newest units first, contiguous; with ageing, a unit
    /// that does not fit whole is tried with its old results shortened.
    fn fill(&mut self) -> Result<(), Failed<'a>> {
        let members = match &self.opts.aging {
            Some(aging) => {
                let names: BTreeMap<&str, &str> = self
                    .messages
                    .iter()
                    .flat_map(Message::calls)
                    .map(|c| (c.id.as_str(), c.name.as_str()))
                    .collect();
                self.forms = aging.forms(self.messages, &self.tokens, &*self.counter, |id| {
                    names.get(id).map(|n| (*n).to_owned())
                });
                self.unit_step = vec![0; self.units.len()];
                self.members()
            }
            None => Vec::new(),
        };
        let mut order: Vec<usize> = (0..self.units.len()).collect();
        order.sort_by_key(|&u| std::cmp::Reverse(self.units[u].last));
        // A recall window's cap holds once the kept units start where the
        // provider accepts a window: the newest unit, and the units back to
        // such a start, may take the whole budget.
        let cap = self.cap.unwrap_or(self.available).min(self.available);
        let mut spent = 0i64;
        let mut cut: Option<usize> = None;
        let required = self.required_start();
        let task = self
            .pin
            .iter()
            .position(|p| matches!(p, Some(Decision::PinnedTask { .. })));
        for &u in &order {
            let limit = match self.kept_units.last() {
                Some(&oldest) if self.valid_start(oldest, required.as_ref(), task) => cap,
                _ => self.available,
            };
            let remaining = limit.saturating_sub(spent).max(0);
            let unit = &self.units[u];
            let d = if let Some(c) = cut {
                Decision::OlderThanCut { cut_position: c }
            } else if unit.tokens <= remaining {
                spent += unit.tokens;
                self.kept_units.push(u);
                Decision::Kept
            } else if let Some((step, t)) = members.get(u).and_then(|m| self.shortest(m, remaining))
            {
                spent += t;
                self.kept_units.push(u);
                self.unit_step[u] = step;
                Decision::Kept
            } else {
                cut = Some(self.pieces[unit.first].msg);
                Decision::DoesNotFit {
                    unit_tokens: unit.tokens,
                    available_tokens: remaining,
                    unit_len: unit.len,
                }
            };
            self.unit_decision[u] = Some(d);
        }
        let task_pinned = self
            .pin
            .iter()
            .any(|p| matches!(p, Some(Decision::PinnedTask { .. })));
        if self.kept_units.is_empty()
            && !task_pinned
            && let Some(&newest) = order.first()
        {
            let unit = &self.units[newest];
            let (first, last) = (self.pieces[unit.first].msg, self.pieces[unit.last].msg);
            let conversation = (0..self.messages.len())
                .filter(|&i| self.pin[i].is_none())
                .count();
            let error = ChatError::NothingFits {
                position: first,
                label: self.messages[first].label(),
                last_position: last,
                unit_messages: last - first + 1,
                whole_conversation: self.units.len() == 1 && last - first + 1 == conversation,
                unit_tokens: unit.tokens,
                available_tokens: self.available,
            };
            let rows = self.rows();
            return Err(Failed { error, rows });
        }
        Ok(())
    }

    /// The first ageing step at which a unit of `members` fits `remaining`.
    fn shortest(&self, members: &[usize], remaining: i64) -> Option<(usize, i64)> {
        let steps = members
            .iter()
            .map(|&p| match self.pieces[p].half {
                Half::Text => 0,
                _ => self.forms.get(self.pieces[p].msg).map_or(0, Vec::len),
            })
            .max()?;
        (1..=steps).find_map(|step| {
            let t = members.iter().fold(0i64, |acc, &p| {
                acc.saturating_add(self.piece_tokens_at(p, step))
            });
            (t <= remaining).then_some((step, t))
        })
    }

    /// The role the conversation must start with after the pinned prompts.
    fn required_start(&self) -> Option<Role> {
        match (self.opts.format, &self.opts.start_on) {
            (_, Some(r)) => Some(r.clone()),
            (Format::Anthropic | Format::Gemini, None) => Some(Role::User),
            (Format::OpenAi | Format::Responses, None) => None,
        }
    }

    /// Whether a window may start its conversation with unit `u`: it
    /// starts with the required role, or comes after a pinned task (any
    /// unit may follow it), or no role is required.
    /// (`required`: [`required_start`](Self::required_start); `task`: the
    /// pinned task's position.)
    fn valid_start(&self, u: usize, required: Option<&Role>, task: Option<usize>) -> bool {
        let Some(required) = required else {
            return true;
        };
        let piece = self.pieces[self.units[u].first];
        let after_task = task.is_some_and(|t| piece.msg >= t);
        let m = &self.messages[piece.msg];
        after_task
            || match piece.half {
                Half::Text => *required == Role::User,
                Half::Results => false,
                Half::Whole => {
                    (m.role == *required && !m.is_tool_result())
                        || crate::formats::starts_window(self.opts.format, m)
                }
            }
    }

    /// Phase `repair`: the window starts where the provider accepts it and
    /// ends on an `end_on` role.
    fn repair(&mut self) {
        let mut kept = std::mem::take(&mut self.kept_units);
        kept.sort_by_key(|&u| self.units[u].first);
        // A pinned task is a user message: a conversation may start with
        // it, and any unit may follow it. Units older than the task, when
        // the window reaches back past it, must still start as the
        // provider requires.
        let task = self
            .pin
            .iter()
            .position(|p| matches!(p, Some(Decision::PinnedTask { .. })));
        if let Some(required) = self.required_start() {
            let drop_n = kept
                .iter()
                .take_while(|&&u| !self.valid_start(u, Some(&required), task))
                .count();
            for &u in &kept[..drop_n] {
                self.unit_decision[u] = Some(Decision::StartRule {
                    required: required.clone(),
                });
            }
            kept.drain(..drop_n);
        }
        if self.opts.format == Format::Gemini {
            kept = self.alternate(&kept);
        }
        if let Some(end_on) = &self.opts.end_on {
            while let Some(&u) = kept.last() {
                let last = self.pieces[self.units[u].last].msg;
                if end_on.contains(&self.messages[last].role) {
                    break;
                }
                self.unit_decision[u] = Some(Decision::EndRule);
                kept.pop();
            }
        }
        self.kept_units = kept;
    }

    /// Gemini's alternation (spec 24, G3): user and model turns take turns.
    /// A window of whole units alternates where the input does, but a
    /// dropped orphan or a pinned task can bring two turns of one role
    /// together. Walking the sent turns in order, the older of two such
    /// neighbours is dropped (its unit, explained as
    /// [`Decision::Alternation`]), or the newer one when the older is
    /// pinned; two pinned turns are left as the caller pinned them.
    fn alternate(&mut self, kept: &[usize]) -> Vec<usize> {
        let mut turns: Vec<(usize, Option<usize>)> = kept
            .iter()
            .map(|&u| (self.pieces[self.units[u].first].msg, Some(u)))
            .collect();
        turns.extend(
            (0..self.messages.len())
                .filter(|&i| self.pin[i].is_some() && self.messages[i].role != Role::System)
                .map(|i| (i, None)),
        );
        turns.sort_by_key(|t| t.0);
        let role = |(msg, unit): (usize, Option<usize>), end: bool| {
            let m = match unit {
                Some(u) if end => self.pieces[self.units[u].last].msg,
                _ => msg,
            };
            self.messages[m].role.clone()
        };
        let mut sent: Vec<(usize, Option<usize>)> = Vec::with_capacity(turns.len());
        let mut dropped: Vec<(usize, Role)> = Vec::new();
        for turn in turns {
            let first = role(turn, false);
            let mut push = true;
            while let Some(&top) = sent.last() {
                if role(top, true) != first {
                    break;
                }
                match (top.1, turn.1) {
                    (Some(older), _) => {
                        dropped.push((older, first.clone()));
                        sent.pop();
                    }
                    (None, Some(newer)) => {
                        dropped.push((newer, first.clone()));
                        push = false;
                        break;
                    }
                    (None, None) => break,
                }
            }
            if push {
                sent.push(turn);
            }
        }
        for (u, role) in dropped {
            self.unit_decision[u] = Some(Decision::Alternation { role });
        }
        sent.into_iter().filter_map(|t| t.1).collect()
    }

    /// A piece's decision: made early (pins, orphans), or its unit's.
    fn piece_decision(&self, p: usize) -> Decision {
        let mut d = match (&self.early[p], self.unit_of[p]) {
            (Some(d), _) => d.clone(),
            (None, Some(u)) => self.unit_decision[u].clone().unwrap_or(Decision::Kept),
            (None, None) => Decision::Kept,
        };
        if d == Decision::Kept
            && let Some(Decision::OrphanResult { call_id } | Decision::UnansweredCall { call_id }) =
                &self.orphan[p]
        {
            d = Decision::KeptOrphan {
                call_id: call_id.clone(),
            };
        }
        if d == Decision::Kept
            && let Some(Decision::MalformedResult { .. }) = &self.orphan[p]
        {
            d = Decision::KeptOrphan {
                call_id: String::new(),
            };
        }
        d
    }

    /// A message's row decision and the form it is sent in (when not as read).
    fn message_decision(&self, i: usize) -> (Decision, Option<(Message, i64)>) {
        let p = self.first_piece[i];
        let piece = self.pieces[p];
        let step = self.unit_of[p]
            .and_then(|u| self.unit_step.get(u).copied())
            .unwrap_or(0);
        let shortened = |d: Decision, tokens_whole: i64| -> (Decision, Option<(Message, i64)>) {
            match self.forms.get(i).filter(|f| !f.is_empty()) {
                Some(f) if d == Decision::Kept && step > 0 => {
                    let form = step.min(f.len());
                    let (short, t) = &f[form - 1];
                    (
                        Decision::Shortened {
                            form,
                            tokens: *t,
                            tokens_saved: tokens_whole.saturating_sub(*t),
                        },
                        Some((short.clone(), *t)),
                    )
                }
                _ => (d, None),
            }
        };
        if piece.half == Half::Whole {
            return shortened(self.piece_decision(p), self.tokens[i]);
        }
        let results = self.piece_decision(p);
        let text = self.piece_decision(p + 1);
        let halves = self.halves.get(&i);
        // One half in: the turn is sent as that half (`h[0]` results,
        // `h[1]` text), and says why the other is out.
        let partial = |kept: TurnHalf, half: &(Message, i64), dropped: Decision| {
            let d = Decision::Partial {
                kept,
                tokens: half.1,
                call_ids: self.messages[i].answered_ids().map(str::to_owned).collect(),
                dropped: Box::new(dropped),
            };
            (d, Some(half.clone()))
        };
        match (results.is_kept(), text.is_kept(), halves) {
            (true, true, _) => shortened(results, self.tokens[i]),
            (false, true, Some(h)) => partial(TurnHalf::Text, &h[1], results),
            (true, false, Some(h)) => partial(TurnHalf::Results, &h[0], text),
            // Both halves out: the newer half's reason speaks for the turn,
            // unless it only went with the older one.
            _ => match text {
                Decision::OlderThanCut { .. } if !results.is_kept() => (results, None),
                other => (other, None),
            },
        }
    }

    /// One row per message.
    fn rows(&self) -> Vec<MessageRow<'a>> {
        (0..self.messages.len())
            .map(|i| self.row(i, self.message_decision(i).0))
            .collect()
    }

    /// Message `i`'s row with `decision`.
    fn row(&self, i: usize, decision: Decision) -> MessageRow<'a> {
        MessageRow {
            position: i,
            message: &self.messages[i],
            tokens: self.tokens[i],
            unit: self.unit_of[self.first_piece[i]],
            decision,
            granularity: self.opts.granularity,
        }
    }

    /// Phase `finish`: rows, kept messages, forms, totals and the report.
    fn finish(self) -> Result<Trimmed<'a>, Failed<'a>> {
        let n = self.messages.len();
        let mut rows = Vec::with_capacity(n);
        let mut kept_msgs = Vec::new();
        let mut positions = Vec::new();
        let mut shortened = BTreeMap::new();
        let (mut kept_tokens, mut dropped_tokens) = (0i64, 0i64);
        for i in 0..n {
            let (decision, form) = self.message_decision(i);
            if decision.is_kept() {
                let sent = form.as_ref().map_or(self.tokens[i], |f| f.1);
                kept_tokens = kept_tokens.saturating_add(sent);
                dropped_tokens = dropped_tokens.saturating_add(match &decision {
                    Decision::Partial { tokens, .. } => self.tokens[i].saturating_sub(*tokens),
                    _ => 0,
                });
                kept_msgs.push(&self.messages[i]);
                positions.push(i);
                if let Some((m, _)) = form {
                    shortened.insert(i, m);
                }
            } else {
                dropped_tokens = dropped_tokens.saturating_add(self.tokens[i]);
            }
            rows.push(self.row(i, decision));
        }
        // A window without conversation is refused by providers: say why
        // every conversation message went (see `ChatError::NoConversation`).
        let system = |i: usize| self.pin[i] == Some(Decision::Pinned);
        let conversation = (0..n).filter(|&i| !system(i)).count();
        if conversation > 0 && positions.iter().all(|&i| system(i)) {
            let error = no_conversation(rows.iter().filter(|r| !system(r.position)));
            return Err(Failed { error, rows });
        }
        let pieces = (0..self.pieces.len())
            .map(|p| PieceRow {
                msg: self.pieces[p].msg,
                half: self.pieces[p].half,
                unit: self.unit_of[p],
                tokens: self.pieces[p].tokens,
                kept: self.piece_decision(p).is_kept(),
            })
            .collect();
        let pinned = self.pinned_tokens();
        let recall = self.recalled.map(|mut r| {
            // After the leading pinned messages of the window.
            r.at = positions
                .iter()
                .take_while(|&&i| self.pin[i].is_some())
                .count();
            r
        });
        let recalled = recall.as_ref().map_or(0, |r| r.tokens);
        let report = if self.opts.report {
            TrimReport::new(&rows, &self.units, &self.notes)
        } else {
            TrimReport::empty()
        };
        Ok(Trimmed {
            messages: kept_msgs,
            positions,
            tokens: TrimTokens {
                max_tokens: self.opts.max_tokens,
                overhead: self.overhead,
                tools: self.tools_tokens,
                pinned,
                kept: kept_tokens,
                dropped: dropped_tokens,
                summary: 0,
                recalled,
                window: self
                    .overhead
                    .saturating_add(kept_tokens)
                    .saturating_add(recalled),
            },
            counter: self.counter.describe(),
            rows,
            report,
            shortened,
            notes: self.notes,
            recall,
            summary: None,
            pieces,
        })
    }
}

/// A call key as the explanations print it.
/// Why a window has no conversation message: the conversation's `rows`,
/// counted by what dropped them (see [`ChatError::NoConversation`]).
fn no_conversation<'r, 'a: 'r>(rows: impl Iterator<Item = &'r MessageRow<'a>>) -> ChatError {
    let (mut messages, mut orphans, mut provider_rules, mut budget) = (0, 0, 0, 0);
    for r in rows {
        messages += 1;
        match r.decision {
            Decision::OrphanResult { .. }
            | Decision::UnansweredCall { .. }
            | Decision::MalformedResult { .. }
            | Decision::WithoutFollower { .. }
            | Decision::WithOrphan { .. } => orphans += 1,
            Decision::StartRule { .. } | Decision::EndRule | Decision::Alternation { .. } => {
                provider_rules += 1;
            }
            Decision::DoesNotFit { .. } | Decision::OlderThanCut { .. } => budget += 1,
            _ => {}
        }
    }
    ChatError::NoConversation {
        messages,
        orphans,
        provider_rules,
        budget,
    }
}

fn key_text(key: CallKey<'_>) -> String {
    match key {
        CallKey::Id(id) => id.to_string(),
        CallKey::Legacy(name) => format!("function {name}"),
    }
}

/// A malformed id as an explanation names it (`null`, `the number 42`).
fn describe(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null".into(),
        serde_json::Value::String(s) => format!("the string {s:?}"),
        other => format!("{} ({other})", kind_of(other)),
    }
}

/// The tool definitions must be what both providers take: an array of
/// objects (`null` stands for none). A string, a number or an object where
/// the array belongs would otherwise be counted as no tools at all.
fn check_tools(tools: Option<&serde_json::Value>) -> Result<(), ChatError> {
    use serde_json::Value;
    match tools {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(list)) => match list.iter().position(|t| !t.is_object()) {
            None => Ok(()),
            Some(i) => Err(ChatError::Shape {
                path: format!("tools[{i}]"),
                message: format!(
                    "a tool definition must be an object, not {}",
                    kind_of(&list[i])
                ),
            }),
        },
        Some(other) => Err(ChatError::Shape {
            path: "tools".into(),
            message: format!(
                "`tools` must be an array of tool definitions, not {}",
                kind_of(other)
            ),
        }),
    }
}
