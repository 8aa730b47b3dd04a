//! Replaying a request from its recent end: the suffix a window depends on.
//!
//! A [`simulate`](super::simulate) replays every request of a transcript,
//! and request *k* holds the whole history before it. Trimming each one
//! from its first message makes a replay quadratic in the transcript's
//! length. But a window holds the pinned messages and the newest units, and
//! the units a trim or a session forms after a *boundary* do not depend on
//! anything before it. So a request can be trimmed as its pinned messages
//! followed by the messages from a boundary on (the *composite*), and the
//! window is the same as the whole request's when:
//!
//! * the composite pins what the whole request pins (the prompts, and the
//!   task exactly when the whole request pins it, see `task_pinned`);
//! * no unit crosses the boundary `s`: message `s` is a user message that
//!   answers no call, message `s - 1` is an assistant message that makes
//!   none (so it is no orphan, and no granularity joins the two), no result
//!   at or after `s` answers a call made before it, and no item binds to
//!   the next across it; or, in the tail of a pinned task (no user
//!   message after the task, where every message is a unit of its own at
//!   every granularity), message `s` starts a tool group and `s - 1`
//!   makes no call and does not bind to it — used only by a request that
//!   pins its task;
//! * the window's front lies after the boundary: for the chat trim, the
//!   fill stopped at a unit that did not fit inside the composite; for a
//!   session, the previous window (where the session appends) starts at or
//!   after `s` and was found there.
//!
//! Units before the boundary are the same in every request that holds it
//! (nothing after the boundary joins them), so a session's unit numbers are
//! offset by the units before `s`, counted once on the whole transcript.
//! When a condition cannot be shown (a first turn, changed pins, a fill
//! that kept the whole composite, a failure) the replay trims the whole
//! request instead. `spec/20-prompt-cache.md`, "Replay cost", states the
//! rule; the sim's tests replay random transcripts both ways.

use std::collections::BTreeMap;

use crate::message::{Message, Role};
use crate::trim::{Trim, Trimmed};

/// What the replay knows of a transcript's boundaries, pins and units,
/// computed once.
pub(crate) struct Suffixes {
    /// Whether a request's composite may start at each position: 0 no, 1
    /// yes, 2 when the request pins its task (see [`Boundaries`]).
    boundary: Vec<u8>,
    /// Pinned prompts (empty when prompts are not pinned).
    prompts: Vec<usize>,
    /// The first user message that answers no call (the task candidate).
    task: Option<usize>,
    /// `users[i]`: user messages (not tool results) before `i`.
    users: Vec<usize>,
    /// `calls[i]`: messages making a call before `i`.
    calls: Vec<usize>,
    /// `before[i]`: tokens of the messages before `i`.
    before: Vec<i64>,
    /// The first-user pin the options ask for.
    pin_first_user: Option<bool>,
    /// Units before each position, with the task pinned and not pinned.
    units_before: [Vec<usize>; 2],
}

/// A request's composite: the pinned messages before the boundary, then
/// the messages from it on.
pub(crate) struct Composite {
    /// The messages, owned.
    pub(super) messages: Vec<Message>,
    /// Each one's input position.
    pub(super) positions: Vec<usize>,
    /// The pinned positions before the boundary.
    pins: Vec<usize>,
    /// The boundary and the end.
    start: usize,
    end: usize,
    /// Whether the whole request pins its task.
    pub(super) task_pinned: bool,
    /// Conversation units before the boundary (a session numbers its units
    /// from there).
    pub(super) unit_base: usize,
}

impl Suffixes {
    /// The boundaries of `messages` under `opts`; `tokens` are the whole
    /// transcript's counts (for the distance to the end), `pinned` and
    /// `unpinned` its unlimited trims with the task pinned and not.
    pub(super) fn new(
        messages: &[Message],
        opts: &Trim,
        tokens: &[i64],
        pinned: &Trimmed<'_>,
        unpinned: &Trimmed<'_>,
    ) -> Self {
        let n = messages.len();
        let mut users = Vec::with_capacity(n + 1);
        let mut calls = Vec::with_capacity(n + 1);
        let mut before = Vec::with_capacity(n + 1);
        let (mut u, mut c, mut t) = (0usize, 0usize, 0i64);
        for (m, &tk) in messages.iter().zip(tokens) {
            users.push(u);
            calls.push(c);
            before.push(t);
            u += usize::from(counts_as_user(m));
            c += usize::from(makes_call(m));
            t = t.saturating_add(tk);
        }
        users.push(u);
        calls.push(c);
        before.push(t);
        let mut found = Boundaries::default();
        found.extend(messages, opts);
        let boundary = found.kinds(n);
        let prompts = if opts.pins_prompts() {
            (0..n).filter(|&i| messages[i].role.is_prompt()).collect()
        } else {
            Vec::new()
        };
        Suffixes {
            boundary,
            prompts,
            task: messages.iter().position(fresh_user),
            users,
            calls,
            before,
            pin_first_user: opts.pins_first_user(),
            units_before: [units_before(unpinned, n), units_before(pinned, n)],
        }
    }

    /// Whether the request ending before `end` pins its task, as the trim's
    /// `pin` phase decides: when asked, or by default when it is the only
    /// user message and a call follows it.
    pub(super) fn task_pinned(&self, end: usize) -> bool {
        let Some(task) = self.task.filter(|&t| t < end) else {
            return false;
        };
        match self.pin_first_user {
            Some(pin) => pin,
            None => self.users[end] == 1 && self.calls[end] > self.calls[task],
        }
    }

    /// The pinned positions of the request ending before `end`, ascending.
    pub(super) fn pins(&self, end: usize) -> Vec<usize> {
        let prompts = &self.prompts[..self.prompts.partition_point(|&p| p < end)];
        let mut out = prompts.to_vec();
        if self.task_pinned(end)
            && let Some(t) = self.task
        {
            let at = out.partition_point(|&p| p < t);
            out.insert(at, t);
        }
        out
    }

    /// The composite of the request ending before `end` whose messages from
    /// its boundary on hold more than `need` tokens and start no later than
    /// `latest`; `None` when no boundary qualifies (the whole request is
    /// trimmed then). `roll` holds the previous request's composite: the
    /// boundary moves forward and the end grows, so it is updated in place
    /// (the messages that left are drained, the new ones cloned) rather
    /// than cloned afresh.
    pub(super) fn composite<'r>(
        &self,
        messages: &[Message],
        (end, need, latest): (usize, i64, usize),
        roll: &'r mut Option<Composite>,
    ) -> Option<&'r Composite> {
        let total = self.before[end];
        let task_pinned = self.task_pinned(end);
        let floor = self.task.map_or(0, |t| t + 1);
        let usable = |s: usize| match self.boundary[s] {
            1 => true,
            2 => task_pinned,
            _ => false,
        };
        let mut s = latest.min(end.saturating_sub(1));
        // The latest boundary with more than `need` tokens from it to the end.
        while s > floor && !(usable(s) && total.saturating_sub(self.before[s]) > need) {
            s -= 1;
        }
        if s <= floor || !usable(s) {
            return None;
        }
        let mut pins: Vec<usize> =
            self.prompts[..self.prompts.partition_point(|&p| p < s)].to_vec();
        if task_pinned && let Some(t) = self.task {
            pins.insert(pins.partition_point(|&p| p < t), t);
        }
        let unit_base = self.units_before[usize::from(task_pinned)][s];
        let c = match roll.take() {
            Some(mut c) if c.pins == pins && c.start <= s && s <= c.end && c.end <= end => {
                let n = c.pins.len();
                c.messages.drain(n..n + (s - c.start));
                c.positions.drain(n..n + (s - c.start));
                c.messages.extend(messages[c.end..end].iter().cloned());
                c.positions.extend(c.end..end);
                Composite {
                    start: s,
                    end,
                    task_pinned,
                    unit_base,
                    ..c
                }
            }
            _ => {
                let positions: Vec<usize> = pins.iter().copied().chain(s..end).collect();
                Composite {
                    messages: positions.iter().map(|&p| messages[p].clone()).collect(),
                    positions,
                    pins,
                    start: s,
                    end,
                    task_pinned,
                    unit_base,
                }
            }
        };
        Some(roll.insert(c))
    }
}

/// A user message that answers no call: a boundary candidate, and the
/// task when it is the first.
pub(crate) fn fresh_user(m: &Message) -> bool {
    m.role == Role::User && !m.is_tool_result() && m.answered_ids().next().is_none()
}

/// A user message that is not a tool result (the trim's count of users
/// for the default task pin).
pub(crate) fn counts_as_user(m: &Message) -> bool {
    m.role == Role::User && !m.is_tool_result()
}

/// A message making a call (by id, or a legacy function call).
pub(crate) fn makes_call(m: &Message) -> bool {
    m.calls().next().is_some() || m.legacy_call().is_some()
}

/// Whether `m`, a fresh user message after `prev`, may start a composite
/// as far as the two alone tell: `prev` is an assistant message that makes
/// no call, needs no follower and does not bind to `m`.
fn after_plain_answer(format: crate::Format, prev: &Message, m: &Message) -> bool {
    fresh_user(m)
        && prev.role == Role::Assistant
        && !makes_call(prev)
        && !crate::formats::needs_next(format, prev)
        && !crate::formats::binds_to_next(format, prev, m)
}

/// Whether `m`, an assistant message making calls after `prev`, may start
/// a composite in the tail of a pinned task (no user message since the
/// task), as far as the two alone tell, in the OpenAI and Anthropic
/// formats: it starts a tool group, `prev` makes no call (so no group spans
/// the two) and does not bind to `m`. In the tail every message is a unit
/// of its own at every granularity (the trim's `group` phase), so this is
/// where a one-task agent loop, with no user message after its task, has
/// its boundaries. Gemini's alternation and Responses' item pairing are
/// left to the whole plan.
fn between_groups(format: crate::Format, prev: &Message, m: &Message) -> bool {
    matches!(format, crate::Format::OpenAi | crate::Format::Anthropic)
        && m.role == Role::Assistant
        && makes_call(m)
        && !makes_call(prev)
        && !prev.role.is_prompt()
        && !crate::formats::needs_next(format, prev)
        && !crate::formats::binds_to_next(format, prev, m)
}

/// The boundaries of a transcript that grows at its end, kept message by
/// message: the positions where a composite may start (see the module
/// doc). A result that answers a call made before a boundary removes it:
/// `(maker, result]` is crossed (by id, or a legacy function result by
/// name; the latest earlier maker, as the trim pairs them).
#[derive(Debug, Clone, Default)]
pub(crate) struct Boundaries {
    /// The boundaries at a user message after a plain answer, ascending:
    /// valid for every request.
    list: Vec<usize>,
    /// The boundaries between tool groups in the tail of the task,
    /// ascending: valid for a request that pins its task.
    tail: Vec<usize>,
    /// The latest maker of each call: `(legacy, id or name)`.
    makers: BTreeMap<(bool, String), usize>,
    /// Whether the task (the first user message that answers no call) was
    /// read, and whether no user message has followed it since.
    task_seen: bool,
    in_tail: bool,
    /// How many messages were read.
    len: usize,
}

impl Boundaries {
    /// Reads `messages[self.len..]` (the transcript grew by those).
    pub(crate) fn extend(&mut self, messages: &[Message], opts: &Trim) {
        let format = opts.format();
        for r in self.len..messages.len() {
            let m = &messages[r];
            let legacy = m
                .is_legacy_result()
                .then_some(m.name.as_deref())
                .flatten()
                .map(|name| (true, name));
            for (legacy, key) in m.answered_ids().map(|id| (false, id)).chain(legacy) {
                if let Some(&c) = self.makers.get(&(legacy, key.to_string())) {
                    for list in [&mut self.list, &mut self.tail] {
                        while list.last().is_some_and(|&b| b > c) {
                            list.pop();
                        }
                    }
                }
            }
            for call in m.calls() {
                self.makers.insert((false, call.id.clone()), r);
            }
            if let Some((name, _)) = m.legacy_call() {
                self.makers.insert((true, name.to_string()), r);
            }
            let pinned_prompt = opts.pins_prompts() && m.role.is_prompt();
            if r > 0 && !pinned_prompt {
                let prev = &messages[r - 1];
                if after_plain_answer(format, prev, m) {
                    self.list.push(r);
                } else if self.in_tail && between_groups(format, prev, m) {
                    self.tail.push(r);
                }
            }
            if counts_as_user(m) {
                self.in_tail = !self.task_seen && fresh_user(m);
                self.task_seen |= fresh_user(m);
            }
        }
        self.len = messages.len();
    }

    /// The latest boundary at or before `at`, after `floor`; one in the
    /// task's tail only when the request pins its task.
    pub(crate) fn latest(&self, at: usize, floor: usize, task_pinned: bool) -> Option<usize> {
        let last = |list: &[usize]| {
            let i = list.partition_point(|&b| b <= at);
            i.checked_sub(1).map(|i| list[i])
        };
        let tail = if task_pinned { last(&self.tail) } else { None };
        last(&self.list).max(tail).filter(|&b| b > floor)
    }

    /// Whether a composite may start at `s`: 0 no, 1 for every request, 2
    /// for a request that pins its task.
    fn kinds(&self, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        for &s in &self.tail {
            out[s] = 2;
        }
        for &s in &self.list {
            out[s] = 1;
        }
        out
    }
}

/// `out[s]`: conversation units (as a session numbers them: runs of
/// equal unit among the kept, unpinned pieces) with a piece before `s`.
fn units_before(full: &Trimmed<'_>, n: usize) -> Vec<usize> {
    let mut out = vec![0usize; n + 1];
    let mut rank = 0usize;
    let mut last: Option<usize> = None;
    let mut next = 0usize;
    for p in full
        .pieces
        .iter()
        .filter(|p| p.kept && !full.rows[p.msg].decision.is_pinned())
    {
        let unit = p.unit.unwrap_or(usize::MAX - p.msg);
        // Positions up to this piece's message see the units counted so far.
        while next <= p.msg {
            out[next] = rank;
            next += 1;
        }
        if last != Some(unit) {
            rank += 1;
            last = Some(unit);
        }
    }
    while next <= n {
        out[next] = rank;
        next += 1;
    }
    out
}
