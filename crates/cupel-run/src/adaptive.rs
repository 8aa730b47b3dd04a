//! Adaptive token budgets for multi-agent loops: the next cycle's budget from
//! the recent usage of the whole run and of each agent.
//!
//! A [`UsageRecorder`] is fed one cycle at a time (the tokens each agent used
//! in it) and [`UsageRecorder::suggest_token_budget`] turns what it has seen
//! into the next budget:
//!
//! ```text
//! b(t+1) = ceil( max(u, ū, a, ā) × (1 + m) )
//! ```
//!
//! with `u` the last cycle's total, `ū` the mean of the last ten **non-zero**
//! cycle totals, `a` the largest single-agent usage of the last cycle, `ā` the
//! largest per-agent mean over the agent's last ten cycles (idle cycles count
//! as zeros) and `m` the margin (negative margins count as 0). The rules and
//! every choice where the source is silent are in `spec/16-adaptive-budget.md`
//! (clarifications A-1 to A-15).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use cupel_core::{CupelError, TokenSign};
use rust_decimal::Decimal;

/// How many cycles the means look back: `ū` over the last ten non-zero cycle
/// totals, `ā` over each agent's last ten cycles, and ten consecutive idle
/// cycles after activity drop the budget to 1.
pub const USAGE_WINDOW: usize = 10;

/// Why a cycle could not be recorded. The recorder is left unchanged.
///
/// Converts into [`CupelError`]: [`TotalOverflow`](Self::TotalOverflow) becomes
/// [`CupelError::TokenOverflow`], the others
/// [`CupelError::InvalidArgument`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UsageError {
    /// An agent name was empty or whitespace only.
    #[error("cycle {cycle}: agent name must not be empty or whitespace-only")]
    EmptyAgentName {
        /// The 1-based number of the cycle being recorded.
        cycle: u64,
    },

    /// An agent reported a negative token count.
    #[error("cycle {cycle}: agent '{agent}' reported {tokens} tokens; usage must be >= 0")]
    NegativeTokens {
        /// The 1-based number of the cycle being recorded.
        cycle: u64,
        /// The agent that reported it.
        agent: String,
        /// The rejected count.
        tokens: i64,
    },

    /// The cycle's reports add up to more than `i64::MAX` tokens.
    #[error("cycle {cycle}: the reported usage adds up to {total} tokens, beyond the i64 range")]
    TotalOverflow {
        /// The 1-based number of the cycle being recorded.
        cycle: u64,
        /// The exact sum (saturated at `i128::MAX`).
        total: i128,
    },
}

impl From<UsageError> for CupelError {
    fn from(e: UsageError) -> Self {
        match e {
            UsageError::TotalOverflow { total, .. } => CupelError::TokenOverflow {
                sign: TokenSign::Positive,
                total,
            },
            other => CupelError::InvalidArgument(other.to_string()),
        }
    }
}

/// Which rule produced a [`AdaptiveSuggestion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
#[non_exhaustive]
pub enum SuggestionRule {
    /// No cycle with non-zero usage has been recorded: the current budget is
    /// kept unchanged (a negative one reads as 0; A-7).
    NoUsage,
    /// Ten consecutive zero-usage cycles after activity: the budget is 1.
    Idle,
    /// `ceil(max(u, ū, a, ā) × (1 + m))`, at least 1.
    Usage,
}

/// The four candidates of the update rule after the last recorded cycle.
///
/// The means are shown as [`Decimal`]s (28 significant digits, so `40 / 3`
/// reads `13.333…`); the budget itself is computed from the exact fractions,
/// so it never depends on how a repeating decimal was cut off (A-10).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AdaptiveCandidates {
    /// `u`: the last cycle's total usage (the sum over agents).
    pub total: i64,
    /// `ū`: the mean of the last ten non-zero cycle totals (0 when there are none).
    pub mean_total: Decimal,
    /// `a`: the largest usage of a single agent in the last cycle.
    pub max_agent: i64,
    /// The agent with usage `a` (ties: the smallest name); `None` when `a` is 0.
    pub max_agent_name: Option<String>,
    /// `ā`: the largest per-agent mean over each agent's last ten cycles,
    /// idle cycles counted as zeros.
    pub max_agent_mean: Decimal,
    /// The agent with mean `ā` (ties: the smallest name); `None` when `ā` is 0.
    pub max_agent_mean_name: Option<String>,
}

impl AdaptiveCandidates {
    /// `max(u, ū, a, ā)` as shown (the means rounded to 28 digits).
    pub fn peak(&self) -> Decimal {
        Decimal::from(self.total.max(self.max_agent))
            .max(self.mean_total)
            .max(self.max_agent_mean)
    }
}

/// The next budget, the rule that produced it and the candidates behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AdaptiveSuggestion {
    /// The suggested budget; always at least 1.
    pub budget: i64,
    /// Which rule applied.
    pub rule: SuggestionRule,
    /// The margin actually used (a negative margin becomes 0).
    pub margin: Decimal,
    /// The candidates after the last recorded cycle (`None` before the first).
    pub candidates: Option<AdaptiveCandidates>,
}

/// Per-cycle token usage of a multi-agent loop, and the budget it suggests.
///
/// Record each cycle once with [`record_cycle`](Self::record_cycle), then ask
/// for the next budget with [`suggest_token_budget`](Self::suggest_token_budget)
/// (or [`suggest`](Self::suggest) for the candidates too). Asking does not
/// change the recorder. Agents are identified by their exact name
/// (case-sensitive); an agent is *seen* from the first cycle in which it
/// reports, even with 0 tokens, and every later cycle without a report from
/// it is a zero in its history.
///
/// The state is small — the last ten non-zero totals and, per agent, its last
/// ten cycles — and, with the `serde` feature, serialises so an orchestrator
/// can checkpoint and resume (deserialisation checks the state's invariants).
/// Agents are kept in a `BTreeMap`, so every output is in name order.
///
/// ```
/// use cupel_run::{Decimal, UsageRecorder};
///
/// // The worked example: agents A and B, margin 0.1.
/// let margin: Decimal = "0.1".parse()?;
/// let mut usage = UsageRecorder::new();
///
/// usage.record_cycle([("A", 5)])?;
/// let b = usage.suggest_token_budget(100, margin); // ceil(5 × 1.1)
/// assert_eq!(b, 6);
///
/// usage.record_cycle([("B", 30)])?; // A is idle: a zero in its history
/// let b = usage.suggest_token_budget(b, margin); // ceil(30 × 1.1)
/// assert_eq!(b, 33);
///
/// usage.record_cycle([("A", 5)])?; // B's mean is (30 + 0) / 2 = 15
/// let s = usage.suggest(b, margin);
/// assert_eq!(s.budget, 17); // ceil(15 × 1.1) = ceil(16.5)
/// let c = s.candidates.unwrap();
/// assert_eq!((c.total, c.max_agent), (5, 5));
/// assert_eq!(c.max_agent_mean, Decimal::from(15));
/// assert_eq!(c.max_agent_mean_name.as_deref(), Some("B"));
/// assert_eq!(c.mean_total.round_dp(1).to_string(), "13.3"); // (5 + 30 + 5) / 3
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "RecorderState")
)]
pub struct UsageRecorder {
    /// Cycles recorded so far.
    cycles: u64,
    /// The last cycle's total (`None` before the first cycle).
    last_total: Option<i64>,
    /// The last ten non-zero cycle totals, oldest first.
    nonzero_totals: VecDeque<i64>,
    /// Consecutive zero-total cycles at the end of the history.
    zero_streak: u64,
    /// Per agent active in the last ten cycles, its last ten cycles since it
    /// was first seen, oldest first.
    agents: BTreeMap<String, VecDeque<i64>>,
    /// Agents whose last ten cycles were all zero (A-16): only their names
    /// are kept, so a cycle costs O(agents active in the window), and an
    /// agent that reports again resumes with its nine zeros.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "BTreeSet::is_empty")
    )]
    dormant: BTreeSet<String>,
}

/// A mean `sum / count` kept as an exact fraction (`count` is 1..=10, or
/// `sum = 0, count = 1` for "no values").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mean {
    sum: i128,
    count: i128,
}

impl Mean {
    const ZERO: Mean = Mean { sum: 0, count: 1 };

    fn of(values: &VecDeque<i64>) -> Mean {
        if values.is_empty() {
            return Mean::ZERO;
        }
        Mean {
            sum: values.iter().map(|&v| i128::from(v)).sum(),
            count: values.len() as i128,
        }
    }

    fn whole(v: i64) -> Mean {
        Mean {
            sum: i128::from(v),
            count: 1,
        }
    }

    /// Exact comparison by cross-multiplication: sums are at most
    /// 10 × `i64::MAX` and counts at most 10, so the products fit an `i128`.
    fn cmp_exact(&self, other: &Mean) -> Ordering {
        (self.sum * other.count).cmp(&(other.sum * self.count))
    }

    fn is_zero(&self) -> bool {
        self.sum == 0
    }

    /// The mean as a `Decimal` (rounded to 28 significant digits).
    fn to_decimal(self) -> Decimal {
        let sum = Decimal::from_i128_with_scale(self.sum, 0);
        sum.checked_div(Decimal::from_i128_with_scale(self.count, 0))
            .unwrap_or(Decimal::MAX)
    }
}

/// The exact candidates, before they are shown as decimals.
struct Exact<'a> {
    total: i64,
    mean_total: Mean,
    max_agent: (i64, Option<&'a str>),
    max_agent_mean: (Mean, Option<&'a str>),
}

impl Exact<'_> {
    fn peak(&self) -> Mean {
        [
            Mean::whole(self.total),
            self.mean_total,
            Mean::whole(self.max_agent.0),
            self.max_agent_mean.0,
        ]
        .into_iter()
        .fold(Mean::ZERO, |a, b| {
            if b.cmp_exact(&a) == Ordering::Greater {
                b
            } else {
                a
            }
        })
    }

    fn to_candidates(&self) -> AdaptiveCandidates {
        AdaptiveCandidates {
            total: self.total,
            mean_total: self.mean_total.to_decimal(),
            max_agent: self.max_agent.0,
            max_agent_name: self.max_agent.1.map(str::to_owned),
            max_agent_mean: self.max_agent_mean.0.to_decimal(),
            max_agent_mean_name: self.max_agent_mean.1.map(str::to_owned),
        }
    }
}

impl UsageRecorder {
    /// An empty recorder: no cycles, no agents.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one cycle: the tokens each agent used in it.
    ///
    /// An agent named more than once has its reports added up (A-1). Agents
    /// seen before that do not report are idle: their history gets a zero. An
    /// empty cycle is a cycle in which every agent was idle (A-6). Nothing is
    /// recorded if a name is empty, a count is negative, or the cycle's total
    /// exceeds `i64::MAX` (A-2).
    ///
    /// ```
    /// use cupel_run::{UsageError, UsageRecorder};
    ///
    /// let mut usage = UsageRecorder::new();
    /// usage.record_cycle([("planner", 120), ("coder", 800), ("planner", 30)])?;
    /// assert_eq!(usage.last_total(), Some(950));
    /// let err = usage.record_cycle([("coder", -1)]).unwrap_err();
    /// assert!(matches!(err, UsageError::NegativeTokens { cycle: 2, tokens: -1, .. }));
    /// assert_eq!(usage.cycles(), 1); // the bad cycle left no trace
    /// # Ok::<(), UsageError>(())
    /// ```
    pub fn record_cycle<I, S>(&mut self, usage: I) -> Result<(), UsageError>
    where
        I: IntoIterator<Item = (S, i64)>,
        S: AsRef<str>,
    {
        let cycle = self.cycles.saturating_add(1);
        let mut reports: Vec<(S, i64)> = Vec::new();
        let mut total: i128 = 0;
        for (name, tokens) in usage {
            if name.as_ref().trim().is_empty() {
                return Err(UsageError::EmptyAgentName { cycle });
            }
            if tokens < 0 {
                return Err(UsageError::NegativeTokens {
                    cycle,
                    agent: name.as_ref().to_owned(),
                    tokens,
                });
            }
            total = total.saturating_add(i128::from(tokens));
            reports.push((name, tokens));
        }
        let total = i64::try_from(total).map_err(|_| UsageError::TotalOverflow { cycle, total })?;

        // Merge the reports, sorted by name, with the agents (a BTreeMap, so
        // also by name): one pass, and a String is allocated only for an agent
        // seen for the first time. Every agent's sum is at most the total,
        // which fits an i64, so the additions cannot overflow.
        reports.sort_by(|x, y| x.0.as_ref().cmp(y.0.as_ref()));
        let mut grouped = reports.iter().peekable();
        let mut next_group = |until: Option<&str>| -> Option<(&str, i64)> {
            let (name, first) = grouped.next_if(|(n, _)| until.is_none_or(|u| n.as_ref() <= u))?;
            let name = name.as_ref();
            let mut sum = *first;
            while let Some((_, t)) = grouped.next_if(|(n, _)| n.as_ref() == name) {
                sum = sum.saturating_add(*t);
            }
            Some((name, sum))
        };
        let mut new_agents: Vec<(String, i64)> = Vec::new();
        for (agent, history) in &mut self.agents {
            let mut used = 0;
            while let Some((name, sum)) = next_group(Some(agent)) {
                if name == agent {
                    used = sum;
                } else {
                    new_agents.push((name.to_owned(), sum));
                }
            }
            push_window(history, used);
        }
        while let Some((name, sum)) = next_group(None) {
            new_agents.push((name.to_owned(), sum));
        }
        for (name, used) in new_agents {
            if self.dormant.contains(&name) {
                // Seen before and idle ever since: its window is nine zeros
                // and this cycle. A zero keeps it dormant.
                if used > 0 {
                    self.dormant.remove(&name);
                    let mut window = VecDeque::from([0; USAGE_WINDOW - 1]);
                    window.push_back(used);
                    self.agents.insert(name, window);
                }
            } else {
                self.agents.insert(name, VecDeque::from([used]));
            }
        }
        // An agent idle for the whole window (ten zeros) adds nothing to any
        // candidate: keep only its name, so a cycle costs O(agents active in
        // the window), not O(agents ever seen) (clarification A-16).
        let dormant = &mut self.dormant;
        self.agents.retain(|name, history| {
            let idle = is_idle_window(history);
            if idle {
                dormant.insert(name.clone());
            }
            !idle
        });
        self.last_total = Some(total);
        if total > 0 {
            push_window(&mut self.nonzero_totals, total);
            self.zero_streak = 0;
        } else {
            self.zero_streak = self.zero_streak.saturating_add(1);
        }
        self.cycles = cycle;
        Ok(())
    }

    /// How many cycles have been recorded.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// The last cycle's total usage, `None` before the first cycle.
    pub fn last_total(&self) -> Option<i64> {
        self.last_total
    }

    /// How many zero-usage cycles in a row end the history.
    pub fn idle_cycles(&self) -> u64 {
        self.zero_streak
    }

    /// Whether any cycle so far had non-zero usage.
    pub fn has_usage(&self) -> bool {
        !self.nonzero_totals.is_empty()
    }

    /// The agents seen so far, in name order (those idle for the last ten
    /// cycles included).
    pub fn agents(&self) -> impl Iterator<Item = &str> + '_ {
        let mut active = self.agents.keys().map(String::as_str).peekable();
        let mut dormant = self.dormant.iter().map(String::as_str).peekable();
        // Merge two name-ordered, disjoint sequences.
        std::iter::from_fn(move || match (active.peek(), dormant.peek()) {
            (Some(a), Some(d)) if d < a => dormant.next(),
            (Some(_), _) => active.next(),
            (None, _) => dormant.next(),
        })
    }

    /// The agents whose last ten cycles the formula reads, in name order:
    /// those with some usage in the window (A-16).
    pub fn active_agents(&self) -> impl Iterator<Item = &str> + '_ {
        self.agents.keys().map(String::as_str)
    }

    /// The candidates `u`, `ū`, `a`, `ā` after the last cycle; `None` before
    /// the first.
    pub fn candidates(&self) -> Option<AdaptiveCandidates> {
        self.exact().map(|e| e.to_candidates())
    }

    /// The next token budget, given the current one and the margin.
    ///
    /// * No cycle with non-zero usage yet: `current`, unchanged (a current
    ///   budget of 0 stays 0; a negative one is read as 0) — A-7.
    /// * The last ten cycles all had zero usage, after some activity: 1.
    /// * Otherwise `ceil(max(u, ū, a, ā) × (1 + margin))`, at least 1, in exact
    ///   arithmetic (usage 100 with margin 0.1 gives 110, where `f64` would
    ///   give 111). A negative margin counts as 0; a budget beyond `i64::MAX`
    ///   is capped there.
    ///
    /// The current budget plays no part in the last two cases: a new target
    /// is taken at once, with no hysteresis.
    ///
    /// ```
    /// use cupel_run::{Decimal, UsageRecorder};
    ///
    /// let mut usage = UsageRecorder::new();
    /// assert_eq!(usage.suggest_token_budget(4_000, Decimal::ZERO), 4_000);
    /// usage.record_cycle([("agent", 100)])?;
    /// assert_eq!(usage.suggest_token_budget(4_000, "0.1".parse()?), 110);
    /// assert_eq!(usage.suggest_token_budget(4_000, "-0.5".parse()?), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn suggest_token_budget(&self, current: i64, margin: Decimal) -> i64 {
        self.suggest(current, margin).budget
    }

    /// [`suggest_token_budget`](Self::suggest_token_budget) with the rule that
    /// applied and the candidates, for explanations and charts.
    pub fn suggest(&self, current: i64, margin: Decimal) -> AdaptiveSuggestion {
        let margin = if margin > Decimal::ZERO {
            margin
        } else {
            Decimal::ZERO
        };
        let exact = self.exact();
        let (budget, rule) = match &exact {
            Some(_) if self.zero_streak >= USAGE_WINDOW as u64 && self.has_usage() => {
                (1, SuggestionRule::Idle)
            }
            Some(e) if self.has_usage() => {
                (scaled_ceil(e.peak(), margin).max(1), SuggestionRule::Usage)
            }
            // A-7 (issue 28): unchanged, as the seed says; the one-token
            // floor applies only after activity. A negative budget is read as 0.
            _ => (current.max(0), SuggestionRule::NoUsage),
        };
        AdaptiveSuggestion {
            budget,
            rule,
            margin,
            candidates: exact.map(|e| e.to_candidates()),
        }
    }

    fn exact(&self) -> Option<Exact<'_>> {
        let total = self.last_total?;
        let mut max_agent: (i64, Option<&str>) = (0, None);
        let mut max_mean: (Mean, Option<&str>) = (Mean::ZERO, None);
        // Name order, strictly greater replaces: ties go to the smallest name.
        for (name, history) in &self.agents {
            let last = history.back().copied().unwrap_or(0);
            if last > max_agent.0 {
                max_agent = (last, Some(name));
            }
            let mean = Mean::of(history);
            if mean.cmp_exact(&max_mean.0) == Ordering::Greater {
                max_mean = (mean, Some(name));
            }
        }
        debug_assert!(max_mean.1.is_some() || max_mean.0.is_zero());
        Some(Exact {
            total,
            mean_total: Mean::of(&self.nonzero_totals),
            max_agent,
            max_agent_mean: max_mean,
        })
    }
}

/// Whether a history is a full window of zeros: the agent was idle (or
/// reported 0) in each of the last [`USAGE_WINDOW`] cycles.
fn is_idle_window(history: &VecDeque<i64>) -> bool {
    history.len() == USAGE_WINDOW && history.iter().all(|&v| v == 0)
}

/// Appends to a window of the last [`USAGE_WINDOW`] values.
fn push_window(window: &mut VecDeque<i64>, value: i64) {
    window.push_back(value);
    while window.len() > USAGE_WINDOW {
        window.pop_front();
    }
}

/// `ceil(peak × (1 + margin))` in exact integer arithmetic, capped at
/// `i64::MAX`. `margin` is non-negative.
///
/// With `margin = mantissa / 10^scale`, `1 + margin = (10^scale + mantissa) /
/// 10^scale`, so the result is `ceil(sum × (10^scale + mantissa) / (count ×
/// 10^scale))`: one 256-bit product and one long division, no rounding.
fn scaled_ceil(peak: Mean, margin: Decimal) -> i64 {
    let (Ok(sum), Ok(count)) = (u128::try_from(peak.sum), u128::try_from(peak.count)) else {
        return 0; // negative sums cannot occur: usage is never negative
    };
    let scale = 10u128.pow(margin.scale());
    let mantissa = margin.mantissa().unsigned_abs();
    // mantissa < 2^96 and 10^28 < 2^94: no overflow.
    let factor = scale + mantissa;
    let divisor = count * scale; // count <= 10, scale <= 10^28
    match mul_div_ceil(sum, factor, divisor) {
        Some(q) => i64::try_from(q).unwrap_or(i64::MAX),
        None => i64::MAX,
    }
}

/// `ceil(a × b / c)` for `c > 0`, exactly; `None` when it exceeds `u128::MAX`.
fn mul_div_ceil(a: u128, b: u128, c: u128) -> Option<u128> {
    if c == 0 {
        return None;
    }
    let (hi, lo) = mul_wide(a, b);
    // Long division of the 256-bit (hi, lo) by c, one bit at a time.
    let mut rem: u128 = 0;
    let mut quotient: u128 = 0;
    for i in (0..256u32).rev() {
        let bit = if i >= 128 {
            (hi >> (i - 128)) & 1
        } else {
            (lo >> i) & 1
        };
        let carry = rem >> 127;
        rem = (rem << 1) | bit;
        // With the carry the true remainder is rem + 2^128 >= c; the wrapped
        // subtraction is then exact because the result is below c.
        if carry == 1 || rem >= c {
            rem = rem.wrapping_sub(c);
            if i >= 128 {
                return None;
            }
            quotient |= 1 << i;
        }
    }
    if rem == 0 {
        Some(quotient)
    } else {
        quotient.checked_add(1)
    }
}

/// The full 256-bit product of two `u128`s as (high, low) halves.
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    const MASK: u128 = u64::MAX as u128;
    let (a_hi, a_lo) = (a >> 64, a & MASK);
    let (b_hi, b_lo) = (b >> 64, b & MASK);
    let ll = a_lo * b_lo;
    let lh = a_lo * b_hi;
    let hl = a_hi * b_lo;
    let hh = a_hi * b_hi;
    // Middle column: at most 3 × (2^64 - 1), fits a u128.
    let mid = (ll >> 64) + (lh & MASK) + (hl & MASK);
    let lo = (ll & MASK) | (mid << 64);
    let hi = hh + (lh >> 64) + (hl >> 64) + (mid >> 64);
    (hi, lo)
}

/// The serialised form of a [`UsageRecorder`], checked before it is trusted.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RecorderState {
    cycles: u64,
    last_total: Option<i64>,
    nonzero_totals: VecDeque<i64>,
    zero_streak: u64,
    agents: BTreeMap<String, VecDeque<i64>>,
    #[serde(default)]
    dormant: BTreeSet<String>,
}

/// Why a serialised [`UsageRecorder`] was rejected.
#[cfg(feature = "serde")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid usage recorder state: {0}")]
pub struct InvalidRecorderState(String);

#[cfg(feature = "serde")]
impl TryFrom<RecorderState> for UsageRecorder {
    type Error = InvalidRecorderState;

    fn try_from(s: RecorderState) -> Result<Self, Self::Error> {
        let bad = |m: String| Err(InvalidRecorderState(m));
        let window = USAGE_WINDOW;
        if s.nonzero_totals.len() > window {
            return bad(format!(
                "{} non-zero totals (at most {window})",
                s.nonzero_totals.len()
            ));
        }
        if let Some(v) = s.nonzero_totals.iter().find(|&&v| v <= 0) {
            return bad(format!("non-zero totals must be > 0 (got {v})"));
        }
        match s.last_total {
            None if s.cycles > 0 => return bad("last_total missing after cycles".into()),
            Some(_) if s.cycles == 0 => return bad("last_total set with no cycles".into()),
            Some(t) if t < 0 => return bad(format!("last_total must be >= 0 (got {t})")),
            Some(t) if t > 0 && (s.zero_streak != 0 || s.nonzero_totals.back() != Some(&t)) => {
                return bad(
                    "a non-zero last_total must end nonzero_totals with zero_streak 0".into(),
                );
            }
            Some(0) if s.zero_streak == 0 => {
                return bad("a zero last_total needs zero_streak >= 1".into());
            }
            _ => {}
        }
        if s.zero_streak > s.cycles {
            return bad(format!(
                "zero_streak {} exceeds cycles {}",
                s.zero_streak, s.cycles
            ));
        }
        let nonzero_cycles = s.cycles - s.zero_streak;
        if s.nonzero_totals.len() as u64 > nonzero_cycles {
            return bad(format!(
                "{} non-zero totals but only {nonzero_cycles} cycles before the zero streak",
                s.nonzero_totals.len()
            ));
        }
        // Every agent gets one entry per cycle from the one it was first seen
        // in, so a history is never longer than the run, its newest entries
        // are the last cycle's usage (they add up to last_total), and the
        // cycles of the zero streak are zeros in every history.
        let max_history = usize::try_from(s.cycles).unwrap_or(usize::MAX).min(window);
        let mut last_sum: i128 = 0;
        for (name, history) in &s.agents {
            if name.trim().is_empty() {
                return bad("agent name must not be empty".into());
            }
            if history.is_empty() || history.len() > max_history {
                return bad(format!(
                    "agent '{name}' has {} cycles of history (1 to {max_history} after {} cycles)",
                    history.len(),
                    s.cycles
                ));
            }
            if let Some(v) = history.iter().find(|&&v| v < 0) {
                return bad(format!("agent '{name}': usage must be >= 0 (got {v})"));
            }
            let streak = usize::try_from(s.zero_streak).unwrap_or(usize::MAX);
            if history.iter().rev().take(streak).any(|&v| v != 0) {
                return bad(format!(
                    "agent '{name}' used tokens during the {} zero-usage cycles",
                    s.zero_streak
                ));
            }
            last_sum += history.back().map_or(0, |&v| i128::from(v));
        }
        if let Some(t) = s.last_total
            && last_sum != i128::from(t)
        {
            return bad(format!(
                "the agents' last-cycle usage adds up to {last_sum}, not last_total {t}"
            ));
        }
        if !s.dormant.is_empty() && s.cycles < window as u64 {
            return bad(format!(
                "dormant agents after only {} cycles (an agent is dormant after {window} idle cycles)",
                s.cycles
            ));
        }
        for name in &s.dormant {
            if name.trim().is_empty() {
                return bad("agent name must not be empty".into());
            }
            if s.agents.contains_key(name) {
                return bad(format!("agent '{name}' is both active and dormant"));
            }
        }
        Ok(UsageRecorder {
            cycles: s.cycles,
            last_total: s.last_total,
            nonzero_totals: s.nonzero_totals,
            zero_streak: s.zero_streak,
            agents: s.agents,
            dormant: s.dormant,
        })
    }
}

/// The old name of [`AdaptiveSuggestion`] (renamed so that a name holding "Budget"
/// alone means the context budget; ARCHITECTURE.md, Glossary).
#[deprecated(since = "0.2.0", note = "renamed `AdaptiveSuggestion`")]
pub type BudgetSuggestion = AdaptiveSuggestion;

/// The old name of [`AdaptiveCandidates`] (renamed so that a name holding "Budget"
/// alone means the context budget; ARCHITECTURE.md, Glossary).
#[deprecated(since = "0.2.0", note = "renamed `AdaptiveCandidates`")]
pub type BudgetCandidates = AdaptiveCandidates;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn mul_div_ceil_is_exact() {
        assert_eq!(mul_div_ceil(7, 3, 2), Some(11)); // 21 / 2 = 10.5 -> 11
        assert_eq!(mul_div_ceil(20, 3, 2), Some(30)); // exact, no + 1
        assert_eq!(mul_div_ceil(0, 5, 3), Some(0));
        assert_eq!(
            mul_div_ceil(u128::MAX, u128::MAX, u128::MAX),
            Some(u128::MAX)
        );
        assert_eq!(mul_div_ceil(u128::MAX, 2, 1), None);
        // (2^127) * 4 / 2 = 2^128: one past u128::MAX.
        assert_eq!(mul_div_ceil(1 << 127, 4, 2), None);
        assert_eq!(mul_div_ceil(1, 1, 0), None);
    }

    #[test]
    fn mul_wide_matches_u128_when_it_fits() {
        for (a, b) in [
            (3u128, 5u128),
            (u64::MAX.into(), u64::MAX.into()),
            (1 << 100, 1 << 20),
        ] {
            assert_eq!(mul_wide(a, b), (0, a * b));
        }
        // (2^128 - 1)^2 = 2^256 - 2^129 + 1: high half 2^128 - 2, low half 1.
        assert_eq!(mul_wide(u128::MAX, u128::MAX), (u128::MAX - 1, 1));
    }

    #[test]
    fn scaled_ceil_never_rounds_a_repeating_mean() {
        // ū = 20 / 3, m = 0.5: exactly 10. A decimal 6.666…67 × 1.5 would be
        // 10.000…005 and round up to 11.
        let mean = Mean { sum: 20, count: 3 };
        assert_eq!(scaled_ceil(mean, d("0.5")), 10);
        // 100 × 1.1 = 110 exactly (f64 gives 110.00000000000001 -> 111).
        assert_eq!(scaled_ceil(Mean::whole(100), d("0.1")), 110);
        assert_eq!(scaled_ceil(Mean::whole(i64::MAX), d("0.1")), i64::MAX);
        assert_eq!(scaled_ceil(Mean::whole(5), Decimal::MAX), i64::MAX);
    }
}
