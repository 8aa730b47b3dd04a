//! [`LocalTracker`]: the shared, thread-safe consumption ledger of a run.
//!
//! # Concurrency design
//!
//! A tracker and every child scope created from it share one
//! `Mutex<Ledger>`. Each operation takes the lock once, does plain integer
//! arithmetic on the scopes of its path (itself and its ancestors), and
//! releases it; user code (the clock, `tracing` subscribers) runs outside the
//! lock and nothing in the critical section can panic. One lock for the whole tree makes the
//! check-and-reserve of a projected cost atomic across every scope it charges:
//! two threads cannot both see room for their request and together overshoot a
//! ceiling, and nested scopes cannot deadlock (R-8). The critical section is a
//! handful of comparisons per scope, so contention stays low even with many
//! subagents.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, TimeDelta, Utc};

use crate::{
    Breach, BreachState, BudgetDimension, BudgetExceededError, BudgetPhase, RemainingTime,
    RemainingTokens, RunBudget, RunError, ScopeId, SystemTimeProvider, TimeProvider, TokenUsage,
};

use crate::request::RunRequest;
use crate::rules::{self, Books};

/// The tracing target of every budget event.
pub const RUN_BUDGET_TRACING_TARGET: &str = "cupel::run_budget";

/// One scope's books. Amounts are exact `i128` sums of `i64` values, so no
/// realistic sequence of calls can overflow them.
struct Scope {
    budget: RunBudget,
    /// Depth and label, as errors name the scope.
    id: ScopeId,
    used: [i128; 2],
    reserved: [i128; 2],
    /// Tokens of requests refused at a checkpoint of this scope or of a
    /// descendant: demand the budget did not serve (the adaptive bridge
    /// counts it, [`CycleDemand`](crate::CycleDemand)).
    refused: [i128; 2],
    /// Set by the first failed check of this scope; from then on every
    /// checkpoint of this scope and of its descendants returns it (R-7).
    halted: Option<Box<BudgetExceededError>>,
}

impl Scope {
    fn usage(&self) -> TokenUsage {
        TokenUsage::saturating_from_i128(self.used[0], self.used[1])
    }
    fn reserved(&self) -> TokenUsage {
        TokenUsage::saturating_from_i128(self.reserved[0], self.reserved[1])
    }
    fn books(&self) -> Books {
        Books {
            budget: self.budget,
            used: self.used,
            reserved: self.reserved,
        }
    }
    fn state(&self, request: &RunRequest, now: DateTime<Utc>, requester: &ScopeId) -> BreachState {
        BreachState {
            budget: self.budget,
            usage: self.usage(),
            reserved: self.reserved(),
            requested: request.tokens(),
            requested_duration: request.duration(),
            now: Some(now),
            scope: self.id.clone(),
            requester: requester.clone(),
        }
    }
}

struct Ledger {
    /// Scope entries by index; index 0 is the root. A child's entry is freed
    /// when its last handle drops and its index reused by a later child.
    scopes: Vec<Scope>,
    /// Indices of freed entries, ready for reuse.
    free: Vec<usize>,
}

impl Ledger {
    /// Frees a child scope's entry. Its usage is already in its ancestors'
    /// books (every record and settlement charges the whole path), and no
    /// reservation can still be open on it (a reservation holds a handle).
    fn release(&mut self, index: usize) {
        if let Some(scope) = self.scopes.get_mut(index) {
            scope.used = [0; 2];
            scope.reserved = [0; 2];
            scope.refused = [0; 2];
            scope.halted = None;
            scope.id = ScopeId::ROOT;
            scope.budget = RunBudget::unlimited();
            self.free.push(index);
        }
    }
}

/// Keeps a child scope's ledger entry alive. Every handle of the scope (its
/// trackers, reservations and meters, and its children's leases) holds it;
/// the last one dropped frees the entry (issue 31: two million short-lived
/// subagent scopes grew the ledger to 377 MB).
struct ScopeLease {
    shared: Arc<Shared>,
    index: usize,
    /// The parent's lease: a parent entry outlives its children.
    _parent: Option<Arc<ScopeLease>>,
}

impl Drop for ScopeLease {
    fn drop(&mut self) {
        // The guard is released before `_parent` drops, so a chain of leases
        // freed together never locks twice at once.
        self.shared.lock().release(self.index);
    }
}

struct Shared {
    clock: Arc<dyn TimeProvider>,
    ledger: Mutex<Ledger>,
}

impl Shared {
    /// The ledger. A poisoned lock is recovered: no critical section can
    /// leave the books half-updated (they contain no panicking code), so the
    /// data is consistent even if another thread panicked while holding it.
    fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A point-in-time view of a tracker, as seen from its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunSnapshot {
    /// The clock reading.
    pub now: DateTime<Utc>,
    /// The earliest deadline of this scope and its ancestors.
    pub deadline: Option<DateTime<Utc>>,
    /// `deadline - now` (zero or negative once expired); `None` without a deadline.
    pub remaining_time: Option<TimeDelta>,
    /// Usage recorded through this scope (and its children).
    pub usage: TokenUsage,
    /// Tokens held by unsettled reservations of this scope.
    pub reserved: TokenUsage,
    /// What a new reservation could take per dimension: the smallest
    /// `limit - usage - reserved` over this scope and its ancestors. `None`
    /// when no scope on the path has a token limit; an unbounded dimension
    /// is `None` inside.
    pub remaining_tokens: Option<RemainingTokens>,
    /// Whether a failed check has halted this scope or an ancestor.
    pub halted: bool,
    /// `0` for the root tracker, `n` for a child `n` levels down.
    pub scope_depth: usize,
}

/// One line for people:
///
/// ```text
/// run budget (depth 0): used input 10, output 5 (reserved input 0, output 0); tokens left: input 90, output unbounded; time: 1m 30s left (deadline 2026-01-01T00:01:30Z)
/// ```
///
/// `tokens left: unlimited` without a token limit, `time: no deadline`
/// without a deadline, and `; halted` at the end once a check failed.
impl fmt::Display for RunSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "run budget (depth {}): used {} (reserved {}); tokens left: ",
            self.scope_depth, self.usage, self.reserved
        )?;
        match &self.remaining_tokens {
            Some(r) => write!(f, "{r}")?,
            None => f.write_str("unlimited")?,
        }
        match (self.remaining_time, self.deadline) {
            (Some(t), Some(d)) => write!(
                f,
                "; time: {} (deadline {})",
                RemainingTime::new(t),
                d.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
            )?,
            (Some(t), None) => write!(f, "; time: {}", RemainingTime::new(t))?,
            _ => f.write_str("; time: no deadline")?,
        }
        if self.halted {
            f.write_str("; halted")?;
        }
        Ok(())
    }
}

/// The tracker's current state: its [`snapshot`](LocalTracker::snapshot)'s
/// one line, with the scope's label in front when it has one.
impl fmt::Display for LocalTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(label) = self.label() {
            write!(f, "[{}] ", label.escape_debug())?;
        }
        write!(f, "{}", self.snapshot())
    }
}

impl RunSnapshot {
    /// `remaining_time` in whole milliseconds (the `budget_remaining_time`
    /// telemetry value).
    pub fn remaining_time_ms(&self) -> Option<i64> {
        self.remaining_time.map(|t| t.num_milliseconds())
    }
}

/// The shared consumption ledger of a run: one [`RunBudget`] per scope, the
/// cumulative [`TokenUsage`] recorded against it, and the checkpoints that
/// enforce it.
///
/// Cloning is cheap (an `Arc`) and every clone is the *same* tracker: hand
/// clones to steps, tools and subagents, and their consumption reduces what
/// every other holder sees. A subagent that should get less than the whole
/// run can take a [`child`](Self::child) scope with its own tighter ceiling or
/// earlier deadline; it still charges its parent.
///
/// | checkpoint | method | fails when |
/// | --- | --- | --- |
/// | pre-flight | [`preflight`](Self::preflight) | the deadline passed, or a bounded dimension is depleted |
/// | provider request / tool execution | [`reserve`](Self::reserve) (or [`check`](Self::check)); [`reserve_request`](Self::reserve_request) / [`check_request`](Self::check_request) with a projected duration | as pre-flight, or the projected cost does not fit what remains, or the request would outlive a deadline |
/// | finalization | [`finalize`](Self::finalize) | the final tally is over a ceiling |
///
/// A failed checkpoint *halts* the scope that ran out: every later checkpoint
/// of that scope and of all scopes below it returns the same error, so an
/// overage anywhere stops the whole run (or, for a child's own ceiling, just
/// that child). [`would_fit`](Self::would_fit) asks the same question without
/// halting anything. Providers that report running totals feed them through
/// a [`UsageMeter`](crate::UsageMeter) ([`meter`](Self::meter)), which
/// records only the increase. Every checkpoint emits a `tracing` event (target
/// [`RUN_BUDGET_TRACING_TARGET`]) with the fields `budget_remaining_time`
/// (milliseconds), `budget_remaining_tokens.input` and
/// `budget_remaining_tokens.output`.
///
/// ```
/// use chrono::TimeDelta;
/// use cupel_run::{
///     BudgetPhase, LocalTracker, Deadline, ManualTimeProvider, RunBudget, TokenLimit,
///     TokenUsage,
/// };
/// let clock = ManualTimeProvider::new("2026-01-01T12:00:00Z".parse().unwrap());
/// let budget = RunBudget::builder()
///     .deadline(Deadline::after(&clock, TimeDelta::seconds(60)))
///     .token_limit(TokenLimit::new(Some(1_000), Some(200))?)
///     .build(&clock)?;
/// let run = LocalTracker::new(budget, clock.clone())?;
/// run.preflight()?;
///
/// // A provider call projected at 600 in / 100 out: reserve, call, settle.
/// let call = run.reserve(BudgetPhase::ProviderRequest, TokenUsage::new(600, 100)?)?;
/// // ... the provider reports what it actually used:
/// call.settle(TokenUsage::new(580, 90)?);
///
/// // A subagent gets at most 300 input tokens of what is left.
/// let sub = run.child(RunBudget::new(None, Some(TokenLimit::new(Some(300), None)?), &clock)?)?;
/// sub.record(TokenUsage::new(250, 40)?);
/// // The parent sees the child's consumption: 1000 - 580 - 250 = 170 input left.
/// assert_eq!(run.remaining_tokens().unwrap().input(), Some(170));
///
/// // A projected cost that does not fit is refused before the call is made.
/// let err = run.reserve(BudgetPhase::ToolExecution, TokenUsage::new(171, 0)?).unwrap_err();
/// assert_eq!(err.remaining(), Some(170));
/// // ... and the run is halted from now on.
/// assert!(run.check(BudgetPhase::ProviderRequest, TokenUsage::ZERO).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct LocalTracker {
    shared: Arc<Shared>,
    /// Scope indices from the root down to this tracker's scope.
    path: Arc<[usize]>,
    /// The label given by [`child_named`](Self::child_named), if any.
    label: Option<Arc<str>>,
    /// For a child scope, the lease on its ledger entry (`None` for a root,
    /// whose entry lives as long as the ledger).
    lease: Option<Arc<ScopeLease>>,
}

/// What [`LocalTracker::admit`] does with a request that fits, and with one
/// that does not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A checkpoint: latch a failure, emit the event.
    Check,
    /// A checkpoint that also reserves the projected tokens on success.
    Reserve,
    /// A question: no latch, no reservation, no event (R-19).
    Probe,
}

impl fmt::Debug for LocalTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalTracker")
            .field("label", &self.label)
            .field("budget", &self.budget())
            .field("snapshot", &self.snapshot())
            .finish_non_exhaustive()
    }
}

impl LocalTracker {
    /// A root tracker for `budget`, reading time from `clock`.
    ///
    /// # Errors
    /// [`RunError::Exceeded`] with phase
    /// [`BudgetPhase::Preflight`] and dimension `deadline` when the deadline
    /// is not after `clock.now()` (a deserialised budget is validated here):
    /// the same error type as every other overage.
    pub fn new(budget: RunBudget, clock: impl TimeProvider + 'static) -> Result<Self, RunError> {
        budget.validate(clock.now(), &ScopeId::ROOT)?;
        let shared = Shared {
            clock: Arc::new(clock),
            ledger: Mutex::new(Ledger {
                scopes: vec![Scope {
                    budget,
                    id: ScopeId::ROOT,
                    used: [0; 2],
                    reserved: [0; 2],
                    refused: [0; 2],
                    halted: None,
                }],
                free: Vec::new(),
            }),
        };
        Ok(Self {
            shared: Arc::new(shared),
            path: Arc::from([0usize]),
            label: None,
            lease: None,
        })
    }

    /// [`new`](Self::new) with the [`SystemTimeProvider`].
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_system_clock(budget: RunBudget) -> Result<Self, RunError> {
        Self::new(budget, SystemTimeProvider)
    }

    /// A child scope with its own `budget`, sharing this tracker's clock.
    ///
    /// Everything recorded or reserved through the child is charged to the
    /// child *and* to every ancestor, and every check of the child also
    /// checks the ancestors: the effective limits are the tightest on the
    /// path. A child budget looser than its parent is accepted — the parent's
    /// limits still apply (R-9). Exceeding the child's own limit halts only
    /// the child (and its descendants).
    ///
    /// # Errors
    /// [`RunError::Exceeded`] (phase `preflight`, dimension
    /// `deadline`, naming the child's depth and label) when the child's
    /// deadline is not after now.
    pub fn child(&self, budget: RunBudget) -> Result<LocalTracker, RunError> {
        self.add_child(None, budget)
    }

    /// [`child`](Self::child) with a label (a subagent's name) that every
    /// [`BudgetExceededError`] involving the child carries: as
    /// [`scope_label`](BudgetExceededError::scope_label) when the child's own
    /// limit breaks, and as
    /// [`requester_label`](BudgetExceededError::requester_label) when the
    /// child's request breaks an ancestor's limit. Labels need not be unique;
    /// any string is accepted (it is escaped in the JSON state).
    ///
    /// ```
    /// use cupel_run::{BudgetPhase, LocalTracker, FixedTimeProvider, RunBudget, TokenLimit, TokenUsage};
    /// let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
    /// let run = LocalTracker::new(
    ///     RunBudget::new(None, Some(TokenLimit::new(Some(100), None)?), &clock)?,
    ///     clock,
    /// )?;
    /// let researcher = run.child_named("researcher", RunBudget::unlimited())?;
    /// let err = researcher
    ///     .reserve(BudgetPhase::ProviderRequest, TokenUsage::new(101, 0)?)
    ///     .unwrap_err();
    /// // The run's limit broke, at the researcher's request.
    /// assert_eq!((err.scope_depth(), err.scope_label()), (0, None));
    /// assert_eq!((err.requester_depth(), err.requester_label()), (1, Some("researcher")));
    /// assert_eq!(
    ///     err.to_string(),
    ///     "run budget exceeded at provider_request (requested by child scope \"researcher\", \
    ///      depth 1): a request for 101 input tokens does not fit the 100 remaining (limit 100, \
    ///      used 0, reserved 0)"
    /// );
    /// # Ok::<(), cupel_run::RunError>(())
    /// ```
    ///
    /// # Errors
    /// [`RunError::Exceeded`] (phase `preflight`, dimension
    /// `deadline`, naming the child's depth and label) when the child's
    /// deadline is not after now.
    pub fn child_named(
        &self,
        label: impl Into<String>,
        budget: RunBudget,
    ) -> Result<LocalTracker, RunError> {
        self.add_child(Some(Arc::from(label.into())), budget)
    }

    fn add_child(
        &self,
        label: Option<Arc<str>>,
        budget: RunBudget,
    ) -> Result<LocalTracker, RunError> {
        let id = ScopeId {
            depth: self.path.len(),
            label: label.clone(),
        };
        budget.validate(self.shared.clock.now(), &id)?;
        let scope = Scope {
            budget,
            id,
            used: [0; 2],
            reserved: [0; 2],
            refused: [0; 2],
            halted: None,
        };
        let mut ledger = self.shared.lock();
        let index = match ledger.free.pop() {
            Some(index) => {
                ledger.scopes[index] = scope;
                index
            }
            None => {
                ledger.scopes.push(scope);
                ledger.scopes.len() - 1
            }
        };
        drop(ledger);
        let mut path = self.path.to_vec();
        path.push(index);
        let lease = ScopeLease {
            shared: Arc::clone(&self.shared),
            index,
            _parent: self.lease.clone(),
        };
        Ok(Self {
            shared: Arc::clone(&self.shared),
            path: Arc::from(path),
            label,
            lease: Some(Arc::new(lease)),
        })
    }

    /// The label given by [`child_named`](Self::child_named); `None` for a
    /// root tracker and an unnamed child.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// Ledger entries allocated and entries live (for tests of scope freeing).
    #[cfg(test)]
    pub(super) fn ledger_entries(&self) -> (usize, usize) {
        let ledger = self.shared.lock();
        (ledger.scopes.len(), ledger.scopes.len() - ledger.free.len())
    }

    fn scope_index(&self) -> usize {
        self.path.last().copied().unwrap_or(0)
    }

    /// This scope's own budget (not the ancestors').
    pub fn budget(&self) -> RunBudget {
        self.shared.lock().scopes[self.scope_index()].budget
    }

    /// `0` for a root tracker, `n` for a child `n` levels down.
    pub fn depth(&self) -> usize {
        self.path.len() - 1
    }

    /// The clock's current reading.
    pub fn now(&self) -> DateTime<Utc> {
        self.shared.clock.now()
    }

    /// Adds consumption that already happened (a provider's reported usage,
    /// a tool's estimate) to this scope and its ancestors, and returns this
    /// scope's new cumulative usage.
    ///
    /// Recording never fails: the tokens were spent, and the books must say
    /// so. An overage shows at the next checkpoint (R-6).
    pub fn record(&self, usage: TokenUsage) -> TokenUsage {
        let mut ledger = self.shared.lock();
        for &i in self.path.iter() {
            let s = &mut ledger.scopes[i];
            s.used[0] += i128::from(usage.input());
            s.used[1] += i128::from(usage.output());
        }
        ledger.scopes[self.scope_index()].usage()
    }

    /// Cumulative usage recorded through this scope.
    pub fn usage(&self) -> TokenUsage {
        self.shared.lock().scopes[self.scope_index()].usage()
    }

    /// The tokens of every request refused at a checkpoint
    /// ([`check`](Self::check), [`reserve`](Self::reserve) and their
    /// `_request` forms) of this scope or of a descendant, cumulative. A
    /// [`would_fit`](Self::would_fit) probe is not a request and is not
    /// counted. A request retried after a refusal counts each time it is
    /// refused.
    pub fn refused(&self) -> TokenUsage {
        let ledger = self.shared.lock();
        let s = &ledger.scopes[self.scope_index()];
        TokenUsage::saturating_from_i128(s.refused[0], s.refused[1])
    }

    /// What this scope asked for: [`usage`](Self::usage) plus
    /// [`refused`](Self::refused), cumulative. The quantity a
    /// [`CycleDemand`](crate::CycleDemand) records: a request the budget
    /// refused was still needed.
    pub fn demand(&self) -> TokenUsage {
        let ledger = self.shared.lock();
        let s = &ledger.scopes[self.scope_index()];
        TokenUsage::saturating_from_i128(s.used[0] + s.refused[0], s.used[1] + s.refused[1])
    }

    /// Time left before the earliest deadline on this scope's path.
    pub fn remaining_time(&self) -> Option<TimeDelta> {
        self.snapshot().remaining_time
    }

    /// What a new reservation could take (see
    /// [`RunSnapshot::remaining_tokens`]).
    pub fn remaining_tokens(&self) -> Option<RemainingTokens> {
        self.snapshot().remaining_tokens
    }

    /// Whether a failed check halted this scope or an ancestor.
    pub fn is_halted(&self) -> bool {
        let ledger = self.shared.lock();
        self.path.iter().any(|&i| ledger.scopes[i].halted.is_some())
    }

    /// The state of this scope as seen at the clock's current reading.
    pub fn snapshot(&self) -> RunSnapshot {
        let now = self.shared.clock.now();
        let ledger = self.shared.lock();
        self.snapshot_locked(&ledger, now)
    }

    fn snapshot_locked(&self, ledger: &Ledger, now: DateTime<Utc>) -> RunSnapshot {
        let books: Vec<Books> = self
            .path
            .iter()
            .map(|&i| ledger.scopes[i].books())
            .collect();
        let halted = self.path.iter().any(|&i| ledger.scopes[i].halted.is_some());
        rules::snapshot(&books, halted, now)
    }

    /// The pre-flight checkpoint: fails if any deadline on the path has
    /// passed or any bounded dimension is depleted (usage plus reservations
    /// meet or exceed its ceiling). Call it before the first provider call.
    ///
    /// # Errors
    /// [`BudgetExceededError`] with phase [`BudgetPhase::Preflight`].
    pub fn preflight(&self) -> Result<RunSnapshot, BudgetExceededError> {
        self.admit(
            &RunRequest::new(BudgetPhase::Preflight, TokenUsage::ZERO),
            Mode::Check,
        )
    }

    /// Checks whether a request projected to cost `projected` may start,
    /// without reserving anything: no deadline passed, no bounded dimension
    /// depleted, and `usage + reserved + projected <= limit` in every bounded
    /// dimension of every scope on the path.
    ///
    /// Between this check and the request another holder may consume the
    /// room; use [`reserve`](Self::reserve) when holders run concurrently.
    /// This is a checkpoint: a failure halts the breached scope (R-7). To
    /// only *ask* whether a request would fit, use
    /// [`would_fit`](Self::would_fit).
    ///
    /// # Errors
    /// [`BudgetExceededError`] with `phase`; the breached scope is halted.
    pub fn check(
        &self,
        phase: BudgetPhase,
        projected: TokenUsage,
    ) -> Result<RunSnapshot, BudgetExceededError> {
        self.check_request(&RunRequest::new(phase, projected))
    }

    /// [`check`](Self::check) for a [`RunRequest`], which may carry a
    /// projected duration: the request must also end no later than every
    /// deadline on the path (`duration <= deadline - now`, R-17).
    ///
    /// # Errors
    /// [`BudgetExceededError`] with the request's phase; the breached scope
    /// is halted.
    pub fn check_request(&self, request: &RunRequest) -> Result<RunSnapshot, BudgetExceededError> {
        self.admit(request, Mode::Check)
    }

    /// Asks whether `request` would pass its checkpoint now, without
    /// reserving, halting anything or emitting an event: the same rules as
    /// [`check_request`](Self::check_request), and a scope that is already
    /// halted answers with its halting error. Use it to choose between
    /// alternatives (a smaller window, a cheaper model) before committing to
    /// one; the answer can be stale by the time a request is made, so still
    /// [`reserve`](Self::reserve) what you then send (R-19).
    ///
    /// ```
    /// use cupel_run::{RunRequest, LocalTracker, FixedTimeProvider, RunBudget, TokenLimit, TokenUsage};
    /// let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
    /// let run = LocalTracker::new(
    ///     RunBudget::new(None, Some(TokenLimit::new(Some(100), None)?), &clock)?,
    ///     clock,
    /// )?;
    /// let big = RunRequest::provider_request(TokenUsage::new(150, 0)?);
    /// assert_eq!(run.would_fit(&big).unwrap_err().remaining(), Some(100));
    /// // Asking did not halt the run: a smaller request still goes through.
    /// assert!(!run.is_halted());
    /// assert!(run.reserve_request(&RunRequest::provider_request(TokenUsage::new(90, 0)?)).is_ok());
    /// # Ok::<(), cupel_run::RunError>(())
    /// ```
    ///
    /// # Errors
    /// The [`BudgetExceededError`] the checkpoint would return.
    pub fn would_fit(&self, request: &RunRequest) -> Result<RunSnapshot, BudgetExceededError> {
        self.admit(request, Mode::Probe)
    }

    /// The atomic form of [`check`](Self::check): if `projected` fits, it is
    /// reserved on this scope and every ancestor in the same critical
    /// section, so concurrent holders can never together pass a ceiling.
    ///
    /// Settle the returned [`Reservation`] with the actual usage once the
    /// provider or tool reports it; dropping it releases the tokens.
    ///
    /// # Errors
    /// [`BudgetExceededError`] with `phase`; the breached scope is halted and
    /// nothing is reserved.
    pub fn reserve(
        &self,
        phase: BudgetPhase,
        projected: TokenUsage,
    ) -> Result<Reservation, BudgetExceededError> {
        self.reserve_request(&RunRequest::new(phase, projected))
    }

    /// [`reserve`](Self::reserve) for a [`RunRequest`], which may carry a
    /// projected duration (see [`check_request`](Self::check_request)).
    ///
    /// ```
    /// use chrono::TimeDelta;
    /// use cupel_run::{
    ///     BudgetDimension, RunRequest, LocalTracker, Deadline, ManualTimeProvider, RunBudget,
    ///     TokenUsage,
    /// };
    /// let clock = ManualTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
    /// let budget = RunBudget::new(Some(Deadline::after(&clock, TimeDelta::seconds(30))), None, &clock)?;
    /// let run = LocalTracker::new(budget, clock.clone())?;
    /// clock.advance(TimeDelta::seconds(10)); // 20 s left
    /// let call = RunRequest::provider_request(TokenUsage::new(500, 100)?);
    /// // A call expected to take 25 s would outlive the deadline: refused before it is made.
    /// let err = run
    ///     .reserve_request(&call.with_duration(TimeDelta::seconds(25))?)
    ///     .unwrap_err();
    /// assert_eq!(err.dimension(), BudgetDimension::Deadline);
    /// assert_eq!(err.remaining_time(), Some(TimeDelta::seconds(20)));
    /// # Ok::<(), cupel_run::RunError>(())
    /// ```
    ///
    /// # Errors
    /// [`BudgetExceededError`] with the request's phase; the breached scope
    /// is halted and nothing is reserved.
    pub fn reserve_request(
        &self,
        request: &RunRequest,
    ) -> Result<Reservation, BudgetExceededError> {
        self.admit(request, Mode::Reserve)?;
        Ok(Reservation {
            tracker: self.clone(),
            amount: request.tokens(),
            open: true,
        })
    }

    /// The finalization checkpoint: fails if the scope (or an ancestor) was
    /// halted, or if the final tally is *over* a ceiling on the path. A tally
    /// exactly at the ceiling fits (R-2). The deadline is not checked here:
    /// the work is already done (R-10).
    ///
    /// # Errors
    /// The halting error, or a [`BudgetExceededError`] with phase
    /// [`BudgetPhase::Response`].
    pub fn finalize(&self) -> Result<RunSnapshot, BudgetExceededError> {
        let phase = BudgetPhase::Response;
        let now = self.shared.clock.now();
        let ledger = self.shared.lock();
        let request = RunRequest::new(phase, TokenUsage::ZERO);
        let outcome = self.halted_error(&ledger).or_else(|| {
            rules::final_breach(&self.path_books(&ledger))
                .map(|(at, d)| self.breach_at(&ledger, at, &request, now, d, Breach::Overshot))
        });
        self.conclude(ledger, now, phase, outcome)
    }

    /// The first halting error on the path, root first (`None` as the scope
    /// to latch: it is latched already).
    fn halted_error(&self, ledger: &Ledger) -> Option<(Option<usize>, BudgetExceededError)> {
        self.path.iter().find_map(|&i| {
            ledger.scopes[i]
                .halted
                .as_deref()
                .map(|e| (None, e.clone()))
        })
    }

    /// Deadline, depletion and fit checks on every scope of the path (root
    /// first; per scope: deadline, projected duration, input, output), then —
    /// for [`Mode::Reserve`] — the reservation, all under one lock.
    fn admit(&self, request: &RunRequest, mode: Mode) -> Result<RunSnapshot, BudgetExceededError> {
        let now = self.shared.clock.now();
        let mut ledger = self.shared.lock();
        let outcome = self.evaluate(&ledger, request, now);
        if outcome.is_some() && mode != Mode::Probe {
            let tokens = request.tokens();
            for &i in self.path.iter() {
                let s = &mut ledger.scopes[i];
                s.refused[0] += i128::from(tokens.input());
                s.refused[1] += i128::from(tokens.output());
            }
        }
        if outcome.is_none() && mode == Mode::Reserve {
            let tokens = request.tokens();
            for &i in self.path.iter() {
                let s = &mut ledger.scopes[i];
                s.reserved[0] += i128::from(tokens.input());
                s.reserved[1] += i128::from(tokens.output());
            }
        }
        if mode == Mode::Probe {
            let snapshot = self.snapshot_locked(&ledger, now);
            drop(ledger);
            return match outcome {
                Some((_, err)) => Err(err),
                None => Ok(snapshot),
            };
        }
        self.conclude(ledger, now, request.phase(), outcome)
    }

    /// The first rule `request` breaks on this scope's path, with the index
    /// of the scope to halt (`None` when it is halted already).
    fn evaluate(
        &self,
        ledger: &Ledger,
        request: &RunRequest,
        now: DateTime<Utc>,
    ) -> Option<(Option<usize>, BudgetExceededError)> {
        self.halted_error(ledger).or_else(|| {
            let books = self.path_books(ledger);
            rules::first_breach(&books, request.tokens(), request.duration(), now)
                .map(|(at, d, breach)| self.breach_at(ledger, at, request, now, d, breach))
        })
    }

    /// The books of the scopes on the path, root first.
    fn path_books(&self, ledger: &Ledger) -> Vec<Books> {
        self.path
            .iter()
            .map(|&i| ledger.scopes[i].books())
            .collect()
    }

    /// The error of a breach of `dimension` found at position `at` of the
    /// path, with the index of the scope to halt.
    fn breach_at(
        &self,
        ledger: &Ledger,
        at: usize,
        request: &RunRequest,
        now: DateTime<Utc>,
        dimension: BudgetDimension,
        breach: Breach,
    ) -> (Option<usize>, BudgetExceededError) {
        let i = self.path[at];
        let requester = &ledger.scopes[self.scope_index()].id;
        let state = ledger.scopes[i].state(request, now, requester);
        (
            Some(i),
            BudgetExceededError::new(request.phase(), dimension, breach, &state),
        )
    }

    /// Latches a new failure on the breached scope, takes the snapshot,
    /// releases the lock and emits the checkpoint event.
    fn conclude(
        &self,
        mut ledger: MutexGuard<'_, Ledger>,
        now: DateTime<Utc>,
        phase: BudgetPhase,
        outcome: Option<(Option<usize>, BudgetExceededError)>,
    ) -> Result<RunSnapshot, BudgetExceededError> {
        if let Some((Some(i), err)) = &outcome
            && let Some(scope) = ledger.scopes.get_mut(*i)
            && scope.halted.is_none()
        {
            scope.halted = Some(Box::new(err.clone()));
        }
        let snapshot = self.snapshot_locked(&ledger, now);
        // Subscribers are user code: never call them under the lock.
        drop(ledger);
        emit(phase, &snapshot, outcome.as_ref().map(|(_, e)| e));
        match outcome {
            Some((_, err)) => Err(err),
            None => Ok(snapshot),
        }
    }

    fn settle_reservation(&self, reserved: TokenUsage, actual: Option<TokenUsage>) -> TokenUsage {
        let mut ledger = self.shared.lock();
        for &i in self.path.iter() {
            let s = &mut ledger.scopes[i];
            s.reserved[0] -= i128::from(reserved.input());
            s.reserved[1] -= i128::from(reserved.output());
            if let Some(a) = actual {
                s.used[0] += i128::from(a.input());
                s.used[1] += i128::from(a.output());
            }
        }
        ledger.scopes[self.scope_index()].usage()
    }
}

/// The `tracing` event of one checkpoint.
#[cfg(feature = "tracing")]
pub(crate) fn emit(phase: BudgetPhase, s: &RunSnapshot, error: Option<&BudgetExceededError>) {
    let input = s.remaining_tokens.and_then(|r| r.input());
    let output = s.remaining_tokens.and_then(|r| r.output());
    match error {
        None => tracing::debug!(
            target: RUN_BUDGET_TRACING_TARGET,
            phase = phase.as_str(),
            scope_depth = s.scope_depth,
            budget_remaining_time = s.remaining_time_ms(),
            budget_remaining_tokens.input = input,
            budget_remaining_tokens.output = output,
            "run budget checkpoint passed"
        ),
        Some(e) => tracing::warn!(
            target: RUN_BUDGET_TRACING_TARGET,
            phase = phase.as_str(),
            scope_depth = s.scope_depth,
            budget_remaining_time = s.remaining_time_ms(),
            budget_remaining_tokens.input = input,
            budget_remaining_tokens.output = output,
            dimension = e.dimension().as_str(),
            requester_depth = e.requester_depth(),
            requester_label = e.requester_label(),
            budget = e.budget_json(),
            "run budget exceeded: {e}"
        ),
    }
}

/// Without the `tracing` feature a checkpoint emits nothing.
#[cfg(not(feature = "tracing"))]
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn emit(_: BudgetPhase, _: &RunSnapshot, _: Option<&BudgetExceededError>) {}

/// Tokens held for one in-flight request by [`LocalTracker::reserve`].
///
/// Settle it with the actual usage ([`settle`](Self::settle)) or give the
/// tokens back ([`release`](Self::release)); dropping an unsettled
/// reservation releases it, so an early return or a panic in the caller never
/// leaks budget.
#[must_use = "dropping a reservation releases it; settle it with the actual usage"]
pub struct Reservation {
    tracker: LocalTracker,
    amount: TokenUsage,
    open: bool,
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("amount", &self.amount)
            .field("scope_depth", &self.tracker.depth())
            .field("scope_label", &self.tracker.label())
            .finish()
    }
}

impl Reservation {
    /// The reserved (projected) usage.
    pub fn amount(&self) -> TokenUsage {
        self.amount
    }

    /// The tracker the reservation was taken from.
    pub fn tracker(&self) -> &LocalTracker {
        &self.tracker
    }

    /// Replaces the reservation with the usage actually reported and returns
    /// the scope's new cumulative usage. `actual` may be above the
    /// reservation (providers report after the fact); it is recorded as is
    /// and an overage shows at the next checkpoint.
    pub fn settle(mut self, actual: TokenUsage) -> TokenUsage {
        self.open = false;
        self.tracker.settle_reservation(self.amount, Some(actual))
    }

    /// Gives the reserved tokens back without recording usage (the request
    /// was not made).
    pub fn release(mut self) {
        self.open = false;
        self.tracker.settle_reservation(self.amount, None);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.open {
            self.tracker.settle_reservation(self.amount, None);
        }
    }
}

/// The old name of [`LocalTracker`] (renamed so that a name holding "Budget"
/// alone means the context budget; ARCHITECTURE.md, Glossary).
#[deprecated(since = "0.2.0", note = "renamed `LocalTracker`")]
pub type BudgetTracker = LocalTracker;

/// The old name of [`RunSnapshot`] (renamed so that a name holding "Budget"
/// alone means the context budget; ARCHITECTURE.md, Glossary).
#[deprecated(since = "0.2.0", note = "renamed `RunSnapshot`")]
pub type BudgetSnapshot = RunSnapshot;
