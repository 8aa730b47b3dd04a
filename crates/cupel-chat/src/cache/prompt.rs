//! [`PromptCache`]: a model of a provider's prefix cache, fed the requests a
//! caller sends, answering what each one reads, writes and pays in full;
//! and [`plan_breakpoints`]: where Anthropic's `cache_control` markers go.

use std::collections::BTreeSet;
use std::hash::{BuildHasher, DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::cache::profile::{CacheMode, CacheProfile, CacheUsage};
use crate::message::Message;
use crate::trim::TrimTokens;
use crate::wire::{Format, message_to_value};

/// One message of a request as the cache sees it: the hash of its
/// serialisation, its tokens and how many content blocks it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Hash of the message as written on the wire (equal for byte-identical
    /// messages).
    pub hash: u64,
    /// Its tokens.
    pub tokens: i64,
    /// Its content blocks (at least 1): what Anthropic's lookback counts.
    pub blocks: usize,
}

impl Block {
    /// The block of `message` counted at `tokens`, serialised in `format`.
    pub fn of(message: &Message, tokens: i64, format: Format) -> Self {
        // The serialisation is streamed into the hasher: no text is built.
        let mut h = HashWriter(BLOCK_HASH.build_hasher());
        // Writing a `Value` into a hasher cannot fail.
        let _ = serde_json::to_writer(&mut h, &message_to_value(message, format));
        Block {
            hash: h.0.finish(),
            tokens: tokens.max(0),
            blocks: message.content.parts().len().max(1),
        }
    }
}

/// The fixed-seed hasher of a block's serialisation (equal messages, equal
/// hashes, in every process).
const BLOCK_HASH: foldhash::quality::FixedState =
    foldhash::quality::FixedState::with_seed(0x6375_7065_6c5f_626c);

/// A writer that feeds a hasher.
struct HashWriter<H: Hasher>(H);

impl<H: Hasher> std::io::Write for HashWriter<H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where `cache_control` markers go in a window of `blocks`, as prefix
/// lengths in messages (a marker at `b` goes on the last content block of
/// message `b - 1`), ascending, at most [`CacheProfile::max_breakpoints`]:
///
/// 1. the end of the window, so the next turn can read all of it;
/// 2. `reuse_at`, the end of the prefix an earlier request wrote and this one
///    repeats (the previous window, when the session appended): a marker
///    exactly there reads it whatever the lookback;
/// 3. the end of the pinned prompts (`pinned` messages), which survive
///    every cut;
/// 4. when the gap between the last two is wider than the lookback, one
///    more marker [`lookback_blocks`](CacheProfile::lookback_blocks) blocks
///    before the end, so a caller who does not pass `reuse_at` next turn
///    still finds this entry.
///
/// A marker whose prefix is shorter than
/// [`min_prefix_tokens`](CacheProfile::min_prefix_tokens) is never placed
/// (the provider would not cache it). Implicit profiles get no markers.
///
/// ```
/// use cupel_chat::{Block, CacheProfile, plan_breakpoints};
/// let b = |tokens| Block { hash: tokens as u64, tokens, blocks: 1 };
/// // system 1,500; then 600, 700, 800.
/// let window = [b(1_500), b(600), b(700), b(800)];
/// let marks = plan_breakpoints(&window, 1, Some(3), &CacheProfile::anthropic());
/// // pinned end (1,500 >= 1,024), the reused prefix (3 messages), the end.
/// assert_eq!(marks, vec![1, 3, 4]);
/// ```
pub fn plan_breakpoints(
    window: &[Block],
    pinned: usize,
    reuse_at: Option<usize>,
    profile: &CacheProfile,
) -> Vec<usize> {
    let n = window.len();
    if profile.mode != CacheMode::Breakpoints || profile.max_breakpoints == 0 || n == 0 {
        return Vec::new();
    }
    let cum = cumulative(window);
    let ok = |b: usize| b >= 1 && b <= n && cum[b] >= profile.min_prefix_tokens;
    let mut wanted: Vec<usize> = Vec::new();
    for b in [Some(n), reuse_at, Some(pinned)].into_iter().flatten() {
        if ok(b) && !wanted.contains(&b) {
            wanted.push(b);
        }
    }
    // A fourth marker where the lookback from the end runs out before it
    // reaches the previous marker: the furthest position the end still sees.
    let before_end = wanted.iter().copied().filter(|&b| b < n).max().unwrap_or(0);
    let mut blocks = 0usize;
    let mut b = n;
    while b > before_end {
        blocks = blocks.saturating_add(window[b - 1].blocks);
        if blocks > profile.lookback_blocks {
            if b < n && ok(b) && !wanted.contains(&b) {
                wanted.push(b);
            }
            break;
        }
        b -= 1;
    }
    wanted.truncate(profile.max_breakpoints);
    wanted.sort_unstable();
    wanted
}

/// What a request sends besides its messages, as the cache sees it: the
/// tool definitions in front, which every provider caches as the start of
/// the prefix (tools, then system, then messages), and a tail billed in full
/// every time (OpenAI's reply priming): [`TrimTokens::tools`] and the rest
/// of [`TrimTokens::overhead`].
///
/// The cache sees the tools as one leading [`Block`] (hashed from their
/// JSON, so changed tools break every prefix); breakpoints go in and come
/// out in message positions, as [`plan_breakpoints`] counts them without
/// the tools, and never on the tools alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    lead: Option<Block>,
    tail: i64,
}

impl Frame {
    /// The frame of a request with the tool definitions `tools` (for the
    /// hash; `None` hashes nothing: planning only needs the tokens) and the
    /// token totals of its trim.
    pub(crate) fn new(tools: Option<&Value>, totals: &TrimTokens) -> Self {
        // `trim` keeps 0 <= tools <= overhead.
        let lead_tokens = totals.tools;
        let lead = (lead_tokens > 0).then(|| {
            let mut h = DefaultHasher::new();
            tools.map(Value::to_string).hash(&mut h);
            Block {
                hash: h.finish(),
                tokens: lead_tokens,
                blocks: 1,
            }
        });
        Frame {
            lead,
            tail: totals.overhead - lead_tokens,
        }
    }

    fn offset(&self) -> usize {
        usize::from(self.lead.is_some())
    }

    /// The markers for a window of `messages` (message positions; `pinned`
    /// and `reuse_at` likewise), with the tools counted in every prefix.
    pub(crate) fn plan(
        &self,
        messages: &[Block],
        pinned: usize,
        reuse_at: Option<usize>,
        profile: &CacheProfile,
    ) -> Vec<usize> {
        self.plan_sent(&self.blocks(messages), pinned, reuse_at, profile)
    }

    /// Plans the markers for `messages` and sends the request (tools,
    /// messages, then the tail uncached) to `cache`: the markers, in
    /// message positions, and what the request is billed.
    pub(crate) fn send(
        &self,
        cache: &mut PromptCache,
        messages: &[Block],
        pinned: usize,
        reuse_at: Option<usize>,
    ) -> (Vec<usize>, CacheUsage) {
        let sent = self.blocks(messages);
        let marks = self.plan_sent(&sent, pinned, reuse_at, cache.profile());
        let o = self.offset();
        let at: Vec<usize> = marks.iter().map(|&b| b + o).collect();
        let usage = cache.request(&sent, &at, self.tail);
        (marks, usage)
    }

    /// The request's blocks: the tools (if any), then `messages`.
    fn blocks(&self, messages: &[Block]) -> Vec<Block> {
        self.lead.iter().chain(messages).copied().collect()
    }

    /// [`plan_breakpoints`] over `sent` (from [`Frame::blocks`]), with
    /// `pinned`, `reuse_at` and the result in message positions.
    fn plan_sent(
        &self,
        sent: &[Block],
        pinned: usize,
        reuse_at: Option<usize>,
        profile: &CacheProfile,
    ) -> Vec<usize> {
        let o = self.offset();
        let pinned = if pinned > 0 { pinned + o } else { 0 };
        plan_breakpoints(sent, pinned, reuse_at.map(|r| r + o), profile)
            .into_iter()
            .filter(|&b| b > o)
            .map(|b| b - o)
            .collect()
    }
}

fn cumulative(window: &[Block]) -> Vec<i64> {
    let mut cum = Vec::with_capacity(window.len() + 1);
    cum.push(0i64);
    for b in window {
        let last = cum.last().copied().unwrap_or(0);
        cum.push(last.saturating_add(b.tokens));
    }
    cum
}

/// A model of one provider's prompt cache across the requests of a
/// conversation: entries do not expire by themselves (the model has no
/// clock; a [`CacheSession`](crate::CacheSession) told it sat idle past the
/// profile's lifetime starts a new one), prefixes are compared message by
/// message.
///
/// * Implicit caching: a request reads the longest prefix (in whole
///   messages) some earlier request had, rounded by
///   [`CacheProfile::cacheable`]; everything else is uncached; nothing is
///   billed as written.
/// * Breakpoints: each marker looks for an entry at its own position and up
///   to [`lookback_blocks`](CacheProfile::lookback_blocks) content blocks
///   before it; the request reads the longest entry found, writes from there
///   to its last marker, and pays the rest in full.
///
/// `overhead` tokens are billed uncached: pass what follows the messages
/// (OpenAI's reply priming) there, and tool definitions, which providers
/// cache as the front of the prefix, as the window's first block (the
/// session and the simulation do both).
///
/// ```
/// use cupel_chat::{Block, CacheProfile, CacheUsage, PromptCache};
/// let b = |id, tokens| Block { hash: id, tokens, blocks: 1 };
/// let mut cache = PromptCache::new(CacheProfile::anthropic());
/// // Turn 1: 1,500 + 600, marker at the end: everything written.
/// let u1 = cache.request(&[b(1, 1_500), b(2, 600)], &[2], 0);
/// assert_eq!(u1, CacheUsage { uncached: 0, written: 2_100, read: 0 });
/// // Turn 2 appends 700 and marks both ends: reads 2,100, writes 700.
/// let u2 = cache.request(&[b(1, 1_500), b(2, 600), b(3, 700)], &[2, 3], 0);
/// assert_eq!(u2, CacheUsage { uncached: 0, written: 700, read: 2_100 });
/// ```
#[derive(Debug, Clone)]
pub struct PromptCache {
    profile: CacheProfile,
    entries: BTreeSet<u64>,
}

impl PromptCache {
    /// An empty cache with `profile`'s rules.
    pub fn new(profile: CacheProfile) -> Self {
        PromptCache {
            profile,
            entries: BTreeSet::new(),
        }
    }

    /// The profile.
    pub fn profile(&self) -> &CacheProfile {
        &self.profile
    }

    /// Sends one request: `window` in order, `breakpoints` as prefix lengths
    /// (see [`plan_breakpoints`]; ignored by implicit profiles), `overhead`
    /// extra tokens. Returns its usage and records what it cached.
    pub fn request(
        &mut self,
        window: &[Block],
        breakpoints: &[usize],
        overhead: i64,
    ) -> CacheUsage {
        let n = window.len();
        let cum = cumulative(window);
        let total = cum[n];
        let mut keys = Vec::with_capacity(n + 1);
        let mut h: u64 = 0x6375_7065_6c00_0001;
        keys.push(h);
        for b in window {
            let mut s = DefaultHasher::new();
            (h, b.hash).hash(&mut s);
            h = s.finish();
            keys.push(h);
        }
        let mut usage = CacheUsage::default();
        match self.profile.mode {
            CacheMode::Implicit => {
                let shared = (1..=n).rev().find(|&i| self.entries.contains(&keys[i]));
                let read = shared.map_or(0, |i| self.profile.cacheable(cum[i]));
                usage.read = read;
                usage.uncached = total - read;
                for &k in &keys[1..] {
                    self.entries.insert(k);
                }
            }
            CacheMode::Breakpoints => {
                let marks: Vec<usize> = breakpoints
                    .iter()
                    .copied()
                    .filter(|&b| b >= 1 && b <= n)
                    .collect();
                let mut read_at = 0usize;
                for &b in &marks {
                    let mut blocks = 0usize;
                    let mut p = b;
                    while p >= 1 {
                        if cum[p] >= self.profile.min_prefix_tokens
                            && self.entries.contains(&keys[p])
                        {
                            read_at = read_at.max(p);
                            break;
                        }
                        blocks = blocks.saturating_add(window[p - 1].blocks);
                        if blocks > self.profile.lookback_blocks {
                            break;
                        }
                        p -= 1;
                    }
                }
                let last = marks.iter().copied().max().unwrap_or(0);
                usage.read = cum[read_at];
                if last > read_at && cum[last] >= self.profile.min_prefix_tokens {
                    usage.written = cum[last] - cum[read_at];
                }
                usage.uncached = total - usage.read - usage.written;
                for &b in &marks {
                    if cum[b] >= self.profile.min_prefix_tokens {
                        self.entries.insert(keys[b]);
                    }
                }
            }
        }
        usage.uncached = usage.uncached.saturating_add(overhead.max(0));
        usage
    }
}
