//! What a session keeps of the transcript behind its previous turn, so that
//! the next turn of a transcript that grew at its end plans only its recent
//! end (`spec/20-prompt-cache.md`, "Turn cost").
//!
//! A turn's window depends on the pinned messages and on the messages from
//! a *boundary* at or before the previous window's front on (the rule the
//! replay of [`simulate`](crate::simulate) proves and tests, module
//! `cache::suffix`). The ledger holds, per input position, what the
//! previous turns learnt (a content fingerprint, the tokens, whether the
//! chat rules keep it, the units before it), the boundaries so far, and the
//! *roll*: the pinned messages and the messages from the last boundary on,
//! owned, which the next turn extends with the new messages and trims
//! instead of the whole transcript. Everything before the boundary is
//! carried: the rows of those messages and the history's tokens come from
//! the ledger, so a turn costs the new messages, the window and one
//! fingerprint comparison per older message.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use std::hash::{BuildHasher, Hash, Hasher};

use crate::cache::suffix::{Boundaries, counts_as_user, fresh_user, makes_call};
use crate::message::{Content, Message, Part};
use crate::trim::Trim;

/// Per input position, what the turns so far made of the message.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// The message's fingerprint ([`fingerprint`]).
    hash: u64,
    /// Its tokens as counted.
    pub(super) tokens: i64,
    /// The tokens of its pieces the chat rules keep when not pinned (both
    /// halves of a mixed turn, or the one kept).
    pub(super) eligible: i64,
    pub(super) kind: Kind,
}

/// What the chat rules make of a message whatever the budget.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
    Pinned,
    PinnedTask,
    /// A piece of it may be in a window.
    Eligible,
    /// Left out by the rules, with the trim's reason.
    Dropped(String),
}

/// A turn's plan as the ledger keeps it, by the positions of the messages
/// the turn was given (a roll's, or the whole transcript's).
#[derive(Debug, Clone, Default)]
pub(super) struct Digest {
    /// Per message: tokens, eligible tokens and kind (without fingerprints).
    pub(super) entries: Vec<(i64, i64, Kind)>,
    /// `units_before[p]`: conversation units with a piece before `p`,
    /// numbered as the session numbers them (`entries.len() + 1` values).
    pub(super) units_before: Vec<usize>,
    /// Whether the turn pinned its task.
    pub(super) task_pinned: bool,
}

/// The task pin's inputs, kept as the transcript grows (the trim's `pin`
/// phase: pinned when asked, or by default when the first user message is
/// the only one and a call follows it).
#[derive(Debug, Clone, Default)]
struct TaskPin {
    task: Option<usize>,
    users: usize,
    calls: usize,
    calls_before_task: usize,
    len: usize,
}

impl TaskPin {
    fn extend(&mut self, messages: &[Message]) {
        for (i, m) in messages.iter().enumerate().skip(self.len) {
            if self.task.is_none() && fresh_user(m) {
                self.task = Some(i);
                self.calls_before_task = self.calls;
            }
            self.users += usize::from(counts_as_user(m));
            self.calls += usize::from(makes_call(m));
        }
        self.len = messages.len();
    }

    fn pinned(&self, asked: Option<bool>) -> bool {
        self.task.is_some()
            && asked.unwrap_or(self.users == 1 && self.calls > self.calls_before_task)
    }
}

/// The messages the last turn trimmed: the pinned ones before `start`,
/// then every message from `start` on, owned.
#[derive(Debug, Clone)]
struct Roll {
    start: usize,
    pins: Vec<usize>,
    messages: Vec<Message>,
}

/// How much of the older transcript a turn compares with what the ledger
/// fingerprinted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    /// Every message: an edit anywhere re-plans the whole transcript.
    All,
    /// The pinned messages, the roll and the message before it (the caller
    /// vouches that the transcript only grew): edits further back go
    /// unseen.
    Appended,
}

/// Where this turn's roll starts and how the session numbers its units.
#[derive(Debug, Clone)]
pub(super) struct RecentEnd {
    /// The boundary: the first message of the roll after its pins.
    pub(super) start: usize,
    /// The pinned positions before it.
    pub(super) pins: Vec<usize>,
    /// Conversation units before the boundary.
    pub(super) unit_base: usize,
    /// Whether the request pins its task.
    pub(super) task_pinned: bool,
}

impl RecentEnd {
    /// The input position of the roll's message `i`.
    pub(super) fn position(&self, i: usize) -> usize {
        match self.pins.get(i) {
            Some(&p) => p,
            None => self.start + (i - self.pins.len()),
        }
    }
}

/// The ledger of a session's transcript (see the module doc).
#[derive(Debug, Clone)]
pub(super) struct Ledger {
    entries: Vec<Entry>,
    /// `eligible_before[p]`: eligible tokens of the messages before `p`.
    eligible_before: Vec<i64>,
    units_before: Vec<usize>,
    boundaries: Boundaries,
    tasks: TaskPin,
    task_pinned: bool,
    /// The pinned positions, ascending.
    pinned: Vec<usize>,
    /// The previous window's first conversation position.
    front: Option<usize>,
    roll: Option<Roll>,
    /// Read back from a session state: the boundaries and the task pin are
    /// read from the transcript at the next turn.
    restored: bool,
}

/// What a [`CacheSession`](crate::CacheSession) learnt of the transcript
/// behind its last turn, kept in a [`SessionState`](crate::SessionState)
/// so that a session resumed in another process (`cupel chat --state`, a
/// replica behind a [`SessionStore`](crate::SessionStore)) need not count
/// and plan the older messages again: per message a content fingerprint,
/// its tokens, the tokens the chat rules keep and what they make of it;
/// the units before each message; the window's front. Opaque: written by
/// [`CacheSession::ledger`](crate::CacheSession::ledger) and read by
/// [`CacheSession::resume_ledger`](crate::CacheSession::resume_ledger).
/// A ledger is checked before it is used — every fingerprint against the
/// transcript, the options it was planned with against the session's —
/// and ignored (the whole transcript planned) when anything differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionLedger {
    /// A fingerprint of the options the turns were planned with.
    plan: String,
    /// Per message: `[fingerprint, tokens, eligible tokens, kind]`, kind 0
    /// eligible, 1 pinned, 2 the pinned task, 3 dropped (then the reason).
    entries: Vec<StoredEntry>,
    units_before: Vec<usize>,
    task_pinned: bool,
    front: Option<usize>,
}

/// One message of a [`SessionLedger`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredEntry(u64, i64, i64, u8, #[serde(default)] Option<String>);

/// `out[p]`: the eligible tokens of `entries[..p]`.
fn prefix_sums(entries: &[Entry]) -> Vec<i64> {
    let mut out = Vec::with_capacity(entries.len() + 1);
    let mut sum = 0i64;
    out.push(0);
    for e in entries {
        sum = sum.saturating_add(e.eligible);
        out.push(sum);
    }
    out
}

/// The pinned positions among `entries` (the first at position `base`).
fn pinned_positions(entries: &[Entry], base: usize) -> Vec<usize> {
    entries
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind, Kind::Pinned | Kind::PinnedTask))
        .map(|(i, _)| base + i)
        .collect()
}

/// The fixed-seed hasher of fingerprints (equal messages, equal values in
/// every process).
const FINGERPRINT: foldhash::quality::FixedState =
    foldhash::quality::FixedState::with_seed(0x6375_7065_6c5f_6c65);

/// A 64-bit fingerprint of everything a message holds: text is hashed as
/// bytes, JSON values streamed in their serialisation, nothing is built.
pub(super) fn fingerprint(m: &Message) -> u64 {
    let mut h = FINGERPRINT.build_hasher();
    m.role.hash(&mut h);
    content(&mut h, &m.content);
    m.name.hash(&mut h);
    m.tool_call_id.hash(&mut h);
    match &m.tool_calls {
        None => h.write_u8(0),
        Some(calls) => {
            h.write_usize(calls.len() + 1);
            for c in calls {
                debug(&mut h, c);
            }
        }
    }
    json(&mut h, &m.extra);
    h.finish()
}

fn content(h: &mut impl Hasher, c: &Content) {
    match c {
        Content::Absent => h.write_u8(0),
        Content::Null => h.write_u8(1),
        Content::Text(t) => {
            h.write_u8(2);
            t.hash(h);
        }
        Content::Parts(parts) => {
            h.write_u8(3);
            h.write_usize(parts.len());
            for p in parts {
                match p {
                    Part::Text { text, extra } => {
                        h.write_u8(0);
                        text.hash(h);
                        json(h, extra);
                    }
                    Part::ToolResult(r) => {
                        h.write_u8(1);
                        r.call_id.hash(h);
                        content(h, &r.content);
                        r.is_error.hash(h);
                        json(h, &r.extra);
                    }
                    other => {
                        h.write_u8(2);
                        debug(h, other);
                    }
                }
            }
        }
    }
}

/// A writer that feeds a hasher.
struct Feed<'h, H: Hasher>(&'h mut H);

impl<H: Hasher> std::io::Write for Feed<'_, H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<H: Hasher> std::fmt::Write for Feed<'_, H> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

fn json<H: Hasher>(h: &mut H, v: &impl serde::Serialize) {
    // Serialising into a hasher cannot fail.
    let _ = serde_json::to_writer(Feed(h), v);
    h.write_u8(0xff);
}

fn debug<H: Hasher>(h: &mut H, v: &impl std::fmt::Debug) {
    let _ = write!(Feed(h), "{v:?}");
    h.write_u8(0xff);
}

impl Ledger {
    /// The ledger after a turn on the whole transcript `messages`, planned
    /// as `digest`; `front` is the window's first conversation position.
    pub(super) fn whole(
        messages: &[Message],
        opts: &Trim,
        digest: Digest,
        front: Option<usize>,
    ) -> Self {
        let entries: Vec<Entry> = messages
            .iter()
            .zip(digest.entries)
            .map(|(m, (tokens, eligible, kind))| Entry {
                hash: fingerprint(m),
                tokens,
                eligible,
                kind,
            })
            .collect();
        let eligible_before = prefix_sums(&entries);
        let mut boundaries = Boundaries::default();
        boundaries.extend(messages, opts);
        let mut tasks = TaskPin::default();
        tasks.extend(messages);
        let pinned = pinned_positions(&entries, 0);
        Ledger {
            pinned,
            restored: false,
            entries,
            eligible_before,
            units_before: digest.units_before,
            boundaries,
            tasks,
            task_pinned: digest.task_pinned,
            front,
            roll: None,
        }
    }

    /// The ledger as a session state keeps it, planned under `plan`.
    pub(super) fn stored(&self, plan: String) -> SessionLedger {
        SessionLedger {
            plan,
            entries: self
                .entries
                .iter()
                .map(|e| {
                    let (k, reason) = match &e.kind {
                        Kind::Eligible => (0, None),
                        Kind::Pinned => (1, None),
                        Kind::PinnedTask => (2, None),
                        Kind::Dropped(r) => (3, Some(r.clone())),
                    };
                    StoredEntry(e.hash, e.tokens, e.eligible, k, reason)
                })
                .collect(),
            units_before: self.units_before.clone(),
            task_pinned: self.task_pinned,
            front: self.front,
        }
    }

    /// The ledger `stored` describes, when it was planned under `plan` and
    /// is whole (one unit count more than messages, kinds known).
    pub(super) fn restore(stored: SessionLedger, plan: &str) -> Option<Self> {
        if stored.plan != plan || stored.units_before.len() != stored.entries.len() + 1 {
            return None;
        }
        let mut entries = Vec::with_capacity(stored.entries.len());
        for StoredEntry(hash, tokens, eligible, k, reason) in stored.entries {
            let kind = match (k, reason) {
                (0, None) => Kind::Eligible,
                (1, None) => Kind::Pinned,
                (2, None) => Kind::PinnedTask,
                (3, Some(r)) => Kind::Dropped(r),
                _ => return None,
            };
            entries.push(Entry {
                hash,
                tokens,
                eligible,
                kind,
            });
        }
        let eligible_before = prefix_sums(&entries);
        let pinned = pinned_positions(&entries, 0);
        Some(Ledger {
            entries,
            eligible_before,
            units_before: stored.units_before,
            boundaries: Boundaries::default(),
            tasks: TaskPin::default(),
            task_pinned: stored.task_pinned,
            pinned,
            front: stored.front,
            roll: None,
            restored: true,
        })
    }

    /// Whether `messages` holds the ledger's transcript unchanged, as far
    /// as `check` compares.
    fn holds(&self, messages: &[Message], check: Check) -> bool {
        let old = self.entries.len();
        if messages.len() < old {
            return false;
        }
        let same = |p: usize| self.entries[p].hash == fingerprint(&messages[p]);
        match (&self.roll, check) {
            (Some(r), _) => {
                let tail = &r.messages[r.pins.len()..];
                let older = match check {
                    Check::All => (0..r.start).all(same),
                    Check::Appended => {
                        r.pins.iter().all(|&p| same(p)) && r.start.checked_sub(1).is_none_or(same)
                    }
                };
                older && tail.len() == old - r.start && tail == &messages[r.start..old]
            }
            // The first turn after a whole one compares everything.
            (None, _) => (0..old).all(same),
        }
    }

    /// This turn's recent end, when the ledger holds `messages`' older part
    /// and a boundary lies at or before the previous window's front; the
    /// roll is then moved there and extended with the new messages. `None`:
    /// plan the whole transcript (the ledger is then rebuilt from it).
    pub(super) fn recent_end(
        &mut self,
        messages: &[Message],
        opts: &Trim,
        check: Check,
    ) -> Option<RecentEnd> {
        if !self.holds(messages, check) {
            return None;
        }
        let old = self.entries.len();
        if self.restored {
            self.boundaries.extend(&messages[..old], opts);
            self.tasks.extend(&messages[..old]);
            self.restored = false;
        }
        // A prompt among the new messages changes what is pinned.
        if opts.pins_prompts() && messages[old..].iter().any(|m| m.role.is_prompt()) {
            return None;
        }
        self.boundaries.extend(messages, opts);
        self.tasks.extend(messages);
        let task_pinned = self.tasks.pinned(opts.pins_first_user());
        if task_pinned != self.task_pinned {
            return None;
        }
        let front = self.front?;
        let floor = self.tasks.task.map_or(0, |t| t + 1);
        let start = self.boundaries.latest(
            front.min(messages.len().saturating_sub(1)),
            floor,
            task_pinned,
        )?;
        let pins = self.pinned[..self.pinned.partition_point(|&p| p < start)].to_vec();
        self.roll = Some(match self.roll.take() {
            Some(mut r) if r.pins == pins && r.start <= start => {
                let n = pins.len();
                r.messages.drain(n..n + (start - r.start));
                r.messages.extend(messages[old..].iter().cloned());
                r.start = start;
                r
            }
            _ => Roll {
                start,
                messages: pins
                    .iter()
                    .map(|&p| &messages[p])
                    .chain(&messages[start..])
                    .cloned()
                    .collect(),
                pins: pins.clone(),
            },
        });
        Some(RecentEnd {
            start,
            pins,
            unit_base: self.units_before[start],
            task_pinned,
        })
    }

    /// The roll's messages, taken for the turn ([`give_back`](Self::give_back)
    /// returns them).
    pub(super) fn take_roll(&mut self) -> Vec<Message> {
        self.roll
            .as_mut()
            .map(|r| std::mem::take(&mut r.messages))
            .unwrap_or_default()
    }

    /// Settles a turn made on the roll: the roll's messages back, the
    /// entries from the boundary on from the turn's `digest`, and the
    /// window's `front`.
    pub(super) fn settle(
        &mut self,
        messages: &[Message],
        at: &RecentEnd,
        (digest, rolled, front): (Digest, Vec<Message>, Option<usize>),
    ) {
        if let Some(r) = self.roll.as_mut() {
            r.messages = rolled;
        }
        let old = self.entries.len();
        let n = at.pins.len();
        let s = at.start;
        let mut hashes: Vec<u64> = self.entries[s..].iter().map(|e| e.hash).collect();
        hashes.extend(messages[old..].iter().map(fingerprint));
        self.entries.truncate(s);
        self.entries
            .extend(digest.entries.into_iter().skip(n).zip(hashes).map(
                |((tokens, eligible, kind), hash)| Entry {
                    hash,
                    tokens,
                    eligible,
                    kind,
                },
            ));
        // Pinned messages from the boundary on (prompts there, pinned as
        // the roll's own messages).
        self.pinned
            .truncate(self.pinned.partition_point(|&p| p < s));
        let tail = pinned_positions(&self.entries[s..], s);
        self.pinned.extend(tail);
        self.units_before.truncate(s);
        self.units_before
            .extend(digest.units_before.into_iter().skip(n));
        self.eligible_before.truncate(s + 1);
        let mut sum = self.eligible_before[s];
        for e in &self.entries[s..] {
            sum = sum.saturating_add(e.eligible);
            self.eligible_before.push(sum);
        }
        self.front = front;
    }

    /// Entry `p` (an older message, before the boundary).
    pub(super) fn entry(&self, p: usize) -> &Entry {
        &self.entries[p]
    }

    /// Eligible tokens before `p`.
    pub(super) fn eligible_before(&self, p: usize) -> i64 {
        self.eligible_before[p]
    }
}
