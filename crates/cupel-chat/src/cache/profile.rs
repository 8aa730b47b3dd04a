//! [`CacheProfile`]: how a provider caches prompt prefixes and what cached
//! tokens cost, and [`CacheUsage`], the three kinds of input tokens a request
//! is billed for.

use std::fmt;
use std::ops::AddAssign;
use std::time::Duration;

/// How a provider decides which prefixes it caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheMode {
    /// Every request's prefix is cached automatically (OpenAI, Gemini): a
    /// later request reads the longest prefix it shares with an earlier
    /// one, rounded down to the provider's step. Writing costs nothing extra.
    Implicit,
    /// Only prefixes ending at an explicit marker are cached (Anthropic's
    /// `cache_control`): writing one is billed at
    /// [`write_multiplier`](CacheProfile::write_multiplier), and a marker
    /// finds an earlier entry only within
    /// [`lookback_blocks`](CacheProfile::lookback_blocks) content blocks
    /// before it.
    Breakpoints,
}

/// A provider's prompt-cache rules and prices, in units of the base input
/// token price (1.0 = one uncached input token).
///
/// Every field is public and every constructor is a starting point: providers
/// change their numbers, so override what differs for your model.
///
/// | profile | mode | minimum prefix | step | markers | write | read |
/// |---|---|---|---|---|---|---|
/// | [`openai`](Self::openai) | implicit | 1,024 | 128 | – | 1.0 | 0.1 |
/// | [`anthropic`](Self::anthropic) | breakpoints | 1,024 | 1 | 4 (20-block lookback) | 1.25 | 0.1 |
/// | [`anthropic_1h`](Self::anthropic_1h) | breakpoints | 1,024 | 1 | 4 (20-block lookback) | 2.0 | 0.1 |
/// | [`gemini`](Self::gemini) | implicit | 2,048 | 1 | – | 1.0 | 0.1 |
///
/// ```
/// use cupel_chat::{CacheProfile, CacheUsage};
/// let p = CacheProfile::anthropic().min_prefix_tokens(2_048); // e.g. a Haiku model
/// // 10,000 tokens read, 2,000 written, 500 uncached:
/// // 500 + 1.25 * 2,000 + 0.1 * 10,000 = 500 + 2,500 + 1,000 = 4,000 base tokens.
/// let u = CacheUsage { uncached: 500, written: 2_000, read: 10_000 };
/// assert_eq!(p.cost(&u), 4_000.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CacheProfile {
    /// `openai`, `anthropic`, `gemini` (or a name of the caller's).
    pub name: String,
    /// Implicit prefix caching or explicit breakpoints.
    pub mode: CacheMode,
    /// The shortest prefix (tokens) the provider caches.
    pub min_prefix_tokens: i64,
    /// Beyond the minimum, cached prefixes grow in steps of this many tokens
    /// (OpenAI: 128). 1 means any length.
    pub prefix_step_tokens: i64,
    /// The most cache markers one request may carry (Anthropic: 4); 0 for
    /// implicit caching.
    pub max_breakpoints: usize,
    /// How many content blocks before a marker the provider searches for an
    /// earlier cache entry (Anthropic: 20).
    pub lookback_blocks: usize,
    /// Price of a cache write per token, in base input tokens.
    pub write_multiplier: f64,
    /// Price of a cache read per token, in base input tokens.
    pub read_multiplier: f64,
    /// How long a cached prefix lives without being used; `None` when the
    /// provider gives no figure. A [`CacheSession`](crate::CacheSession) told
    /// that a request comes later than this
    /// ([`CacheSession::idle`](crate::CacheSession::idle)) expects nothing
    /// from the cache.
    pub lifetime: Option<Duration>,
}

/// The lifetime of OpenAI's automatic cache (prefixes stay "for 5 to 10
/// minutes of inactivity", the lower figure) and of Anthropic's default
/// `cache_control` entries.
const FIVE_MINUTES: Duration = Duration::from_secs(300);

impl CacheProfile {
    /// OpenAI's automatic caching: prompts of 1,024 tokens or more are cached,
    /// hits grow in 128-token increments, with no charge for writing (OpenAI's
    /// prompt-caching guide and its "Prompt Caching 201" cookbook, which also
    /// gives "up to 90%" off input tokens). The read price 0.1 is that of the
    /// GPT-5 family; older models discount less (GPT-4o bills cached input at
    /// half price: set [`read_multiplier`](Self::read_multiplier) to 0.5).
    pub fn openai() -> Self {
        CacheProfile {
            name: "openai".into(),
            mode: CacheMode::Implicit,
            min_prefix_tokens: 1_024,
            prefix_step_tokens: 128,
            max_breakpoints: 0,
            lookback_blocks: 0,
            write_multiplier: 1.0,
            read_multiplier: 0.1,
            lifetime: Some(FIVE_MINUTES),
        }
    }

    /// Anthropic's `cache_control` breakpoints with the 5-minute lifetime: at
    /// most 4 markers, each searching at most 20 blocks back for an earlier
    /// entry; writes 1.25x the base input price, reads 0.1x. The minimum
    /// cacheable prefix is 1,024 tokens for Sonnet and Opus models and
    /// 2,048–4,096 for others: set
    /// [`min_prefix_tokens`](Self::min_prefix_tokens) for yours.
    pub fn anthropic() -> Self {
        CacheProfile {
            name: "anthropic".into(),
            mode: CacheMode::Breakpoints,
            min_prefix_tokens: 1_024,
            prefix_step_tokens: 1,
            max_breakpoints: 4,
            lookback_blocks: 20,
            write_multiplier: 1.25,
            read_multiplier: 0.1,
            lifetime: Some(FIVE_MINUTES),
        }
    }

    /// [`anthropic`](Self::anthropic) with the one-hour lifetime: writes cost
    /// 2x the base input price.
    pub fn anthropic_1h() -> Self {
        CacheProfile {
            name: "anthropic-1h".into(),
            write_multiplier: 2.0,
            lifetime: Some(Duration::from_secs(3_600)),
            ..Self::anthropic()
        }
    }

    /// Gemini's implicit caching (on by default for Gemini 2.5 and newer):
    /// 2,048 tokens minimum for the 2.5 models per Google's caching guide
    /// (ai.google.dev/gemini-api/docs/caching; 4,096 for the 3.x models),
    /// hits billed at the cached-input price, documented as up to 90% off
    /// (read 0.1), no write charge.
    pub fn gemini() -> Self {
        CacheProfile {
            name: "gemini".into(),
            mode: CacheMode::Implicit,
            min_prefix_tokens: 2_048,
            prefix_step_tokens: 1,
            max_breakpoints: 0,
            lookback_blocks: 0,
            write_multiplier: 1.0,
            read_multiplier: 0.1,
            lifetime: None,
        }
    }

    /// [`openai`](Self::openai) with extended retention
    /// (`"prompt_cache_retention": "24h"` on a Chat Completions or
    /// Responses request): cached prefixes are kept up to 24 hours instead
    /// of the in-memory default (cleared after 5 to 10 minutes idle, always
    /// within an hour), at the same prices
    /// (platform.openai.com/docs/guides/prompt-caching#prompt-cache-retention,
    /// read 2026-11-27).
    pub fn openai_24h() -> Self {
        CacheProfile {
            name: "openai-24h".into(),
            lifetime: Some(Duration::from_secs(24 * 3_600)),
            ..Self::openai()
        }
    }

    /// [`gemini`](Self::gemini) for a model: implicit caching's minimum
    /// prefix is 2,048 tokens for the Gemini 2.5 models and 4,096 for the
    /// 3.x models and newer (the table of ai.google.dev/gemini-api/docs/caching,
    /// last updated 2026-10-13, read 2026-11-27). A name this does not know
    /// (`models/` prefix ignored) gets the newer models' 4,096.
    ///
    /// ```
    /// use cupel_chat::CacheProfile;
    /// assert_eq!(CacheProfile::gemini_for_model("models/gemini-2.5-flash").min_prefix_tokens, 2_048);
    /// assert_eq!(CacheProfile::gemini_for_model("gemini-3.1-pro-preview").min_prefix_tokens, 4_096);
    /// ```
    pub fn gemini_for_model(model: &str) -> Self {
        let m = model
            .trim()
            .trim_start_matches("models/")
            .to_ascii_lowercase();
        let min = if m.starts_with("gemini-2.5") || m.starts_with("gemini-2.0") {
            2_048
        } else {
            4_096
        };
        Self::gemini().min_prefix_tokens(min)
    }

    /// The profile of a request in `format` with body fields `body` (as
    /// [`Transcript::body_value`](crate::Transcript::body_value) gives
    /// them): [`anthropic`](Self::anthropic) for Anthropic;
    /// [`openai_24h`](Self::openai_24h) for an OpenAI request asking
    /// `"prompt_cache_retention": "24h"`, else [`openai`](Self::openai);
    /// [`gemini_for_model`](Self::gemini_for_model) of a Gemini body's
    /// `model` (the model is usually in the URL: [`gemini`](Self::gemini)
    /// without one).
    pub fn for_request(format: crate::Format, body: &serde_json::Value) -> Self {
        use crate::Format;
        let field = |k: &str| body.get(k).and_then(serde_json::Value::as_str);
        match format {
            Format::Anthropic => Self::anthropic(),
            Format::Gemini => field("model").map_or_else(Self::gemini, Self::gemini_for_model),
            _ if field("prompt_cache_retention") == Some("24h") => Self::openai_24h(),
            _ => Self::openai(),
        }
    }

    /// `openai`, `openai-24h`, `anthropic`, `anthropic-1h` or `gemini`
    /// (ASCII case ignored).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "openai" => Some(Self::openai()),
            "openai-24h" => Some(Self::openai_24h()),
            "anthropic" => Some(Self::anthropic()),
            "anthropic-1h" => Some(Self::anthropic_1h()),
            "gemini" => Some(Self::gemini()),
            _ => None,
        }
    }

    /// Sets [`min_prefix_tokens`](Self::min_prefix_tokens).
    pub fn min_prefix_tokens(mut self, tokens: i64) -> Self {
        self.min_prefix_tokens = tokens;
        self
    }

    /// Sets [`write_multiplier`](Self::write_multiplier).
    pub fn write_multiplier(mut self, m: f64) -> Self {
        self.write_multiplier = m;
        self
    }

    /// Sets [`read_multiplier`](Self::read_multiplier).
    pub fn read_multiplier(mut self, m: f64) -> Self {
        self.read_multiplier = m;
        self
    }

    /// Sets how long a cached prefix lives unused (`None`: no expiry).
    pub fn lifetime(mut self, lifetime: Option<Duration>) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// The part of a shared prefix of `tokens` the provider can serve from
    /// its cache: 0 below the minimum, then the minimum plus whole steps.
    ///
    /// ```
    /// use cupel_chat::CacheProfile;
    /// let p = CacheProfile::openai();
    /// assert_eq!(p.cacheable(1_023), 0);
    /// // 1,024 + 128 * floor((1,400 - 1,024) / 128) = 1,024 + 128 * 2 = 1,280.
    /// assert_eq!(p.cacheable(1_400), 1_280);
    /// ```
    pub fn cacheable(&self, tokens: i64) -> i64 {
        if tokens < self.min_prefix_tokens.max(1) {
            return 0;
        }
        let step = self.prefix_step_tokens.max(1);
        let min = self.min_prefix_tokens.max(0);
        min.saturating_add((tokens - min) / step * step)
    }

    /// The price of `usage` in base input tokens:
    /// `uncached + write_multiplier * written + read_multiplier * read`.
    pub fn cost(&self, usage: &CacheUsage) -> f64 {
        usage.uncached as f64
            + self.write_multiplier * usage.written as f64
            + self.read_multiplier * usage.read as f64
    }

    /// The default low-water mark of the conversation part of a window whose
    /// conversation may take `available` tokens: `available / (1 + w)`,
    /// rounded down, with `w` the write multiplier (at least 1).
    ///
    /// Why: a cut rewrites the `L` tokens it keeps, at `w` each, and frees
    /// `available - L` tokens of room that later turns fill by appending.
    /// The mark is the deepest cut whose rewrite costs no more than the room
    /// it buys at the base price: `w * L = available - L`. Anthropic's
    /// 5-minute cache (`w` = 1.25) keeps 1/2.25 = 44% of the room, the
    /// one-hour cache (`w` = 2) a third, implicit caches (`w` = 1) half.
    ///
    /// ```
    /// use cupel_chat::CacheProfile;
    /// // 9,000 / (1 + 1.25) = 4,000.
    /// assert_eq!(CacheProfile::anthropic().default_low_water(9_000), 4_000);
    /// ```
    pub fn default_low_water(&self, available: i64) -> i64 {
        let w = if self.write_multiplier.is_finite() {
            self.write_multiplier.max(1.0)
        } else {
            1.0
        };
        let l = (available.max(0) as f64 / (1.0 + w)).floor();
        (l as i64).clamp(0, available.max(0))
    }
}

impl fmt::Display for CacheProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (min prefix {}, write {}x, read {}x)",
            self.name, self.min_prefix_tokens, self.write_multiplier, self.read_multiplier
        )
    }
}

/// The input tokens of one request (or a sum of requests) by how they are
/// billed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheUsage {
    /// Billed at the base input price.
    pub uncached: i64,
    /// Written to the cache (Anthropic's `cache_creation_input_tokens`).
    pub written: i64,
    /// Read from the cache.
    pub read: i64,
}

impl CacheUsage {
    /// All input tokens: `uncached + written + read`.
    pub fn total(&self) -> i64 {
        self.uncached
            .saturating_add(self.written)
            .saturating_add(self.read)
    }

    /// The share of all input tokens read from the cache (0 for no tokens).
    pub fn read_share(&self) -> f64 {
        let t = self.total();
        if t <= 0 {
            0.0
        } else {
            self.read as f64 / t as f64
        }
    }
}

impl AddAssign for CacheUsage {
    fn add_assign(&mut self, o: Self) {
        self.uncached = self.uncached.saturating_add(o.uncached);
        self.written = self.written.saturating_add(o.written);
        self.read = self.read.saturating_add(o.read);
    }
}
