//! One run budget across processes and machines: a [`RunStore`] holds the
//! books, and a [`SharedTracker`] on any process charges them.
//!
//! The in-process [`LocalTracker`](crate::LocalTracker) keeps its books
//! behind a lock in memory: threads and tasks of one process share it. When
//! subagents run as worker processes, queue jobs or replicas on several
//! machines, the books move to a store they all reach:
//!
//! * [`MemoryStore`] — the in-process [`LocalTracker`](crate::LocalTracker)
//!   behind the store contract, with a clock you choose: tests,
//!   single-process use of the shared API, and the reference the Redis store
//!   is tested against.
//! * `RedisStore` (feature `redis`) — Redis or Valkey. Every check-and-reserve
//!   is one server-side script, so concurrent workers never together pass a
//!   ceiling; time is the server's clock, so worker clock skew cannot stretch
//!   a deadline; reservations carry a lease, so a worker that dies mid-call
//!   gives its tokens back when the lease runs out; keys expire after the
//!   deadline plus a grace period.
//!
//! A run is named by a string (`run`); every scope in it (the root, a child
//! per subagent) by a number that any process can hand to another
//! ([`SharedTracker::scope_id`], [`SharedTracker::attach`]). The rules are
//! those of the in-process tracker (`spec/15-run-budget.md`); what is new —
//! leases, the store's clock, failures of the store itself — is
//! `spec/21-shared-run-budget.md`.
//!
//! ```
//! use std::sync::Arc;
//! use cupel_run::store::{MemoryStore, SharedTracker};
//! use cupel_run::{BudgetPhase, ManualTimeProvider, RunBudget, RunTracker, TokenLimit, TokenUsage};
//!
//! let clock = ManualTimeProvider::new("2026-03-01T09:00:00Z".parse()?);
//! let store = Arc::new(MemoryStore::new(clock.clone()));
//! let budget = RunBudget::builder().token_limit(TokenLimit::new(Some(1_000), None)?).build(&clock)?;
//!
//! // The orchestrator opens the run; a worker (another process, with its own
//! // connection to the same store) attaches to a child scope by its number.
//! let run = SharedTracker::create(store.clone(), "run-42", budget)?;
//! let child = run.child_named("worker-1", RunBudget::unlimited())?;
//! let worker = SharedTracker::attach(store.clone(), "run-42", child.scope_id())?;
//!
//! let hold = worker.reserve(BudgetPhase::ProviderRequest, TokenUsage::new(600, 0)?)?;
//! hold.settle(TokenUsage::new(550, 80)?)?;
//! assert_eq!(run.usage()?, TokenUsage::new(550, 80)?);
//! // 550 + 500 > 1,000: refused for every process of the run.
//! assert!(run.reserve(BudgetPhase::ProviderRequest, TokenUsage::new(500, 0)?).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod memory;
#[cfg(feature = "redis")]
mod redis;
mod tracker;

use std::fmt;

use crate::{Breach, BudgetDimension, BudgetPhase, RunBudget, RunError, TokenUsage};
use chrono::{DateTime, TimeDelta, Utc};

pub use memory::MemoryStore;
#[cfg(feature = "redis")]
pub use redis::{REDIS_MAX_TOKENS, RedisStore};
pub use tracker::{
    Checkpoint, FailurePolicy, SharedOptions, SharedReservation, SharedTracker, SharedUsageMeter,
};

/// What a store knows about one scope: its number, its budget and, for a
/// child created with a label, the label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeInfo {
    /// The scope's number in its run (the root is 0).
    pub id: u64,
    /// The scope's own budget.
    pub budget: RunBudget,
    /// The label it was created with.
    pub label: Option<String>,
}

/// One scope's books: exact sums, `[input, output]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScopeBooks {
    /// Settled usage.
    pub used: [i128; 2],
    /// Tokens held by open reservations.
    pub reserved: [i128; 2],
    /// Tokens of refused requests.
    pub refused: [i128; 2],
    /// Whether a failed checkpoint latched on this scope.
    pub halted: bool,
}

/// The books of a scope path (root first) at the store's clock reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathState {
    /// The store's clock when the state was read.
    pub now: DateTime<Utc>,
    /// One entry per scope of the path, root first.
    pub scopes: Vec<ScopeBooks>,
}

/// A failed checkpoint as a store keeps it: enough to rebuild the
/// [`BudgetExceededError`](crate::BudgetExceededError) any process of
/// the run sees for it, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreachRecord {
    /// The checkpoint that failed.
    pub phase: BudgetPhase,
    /// What ran out.
    pub dimension: BudgetDimension,
    /// The rule broken.
    pub breach: Breach,
    /// The depth of the breached scope.
    pub scope_depth: usize,
    /// The depth of the scope that asked.
    pub requester_depth: usize,
    /// The label of the scope that asked.
    pub requester_label: Option<String>,
    /// The breached scope's settled usage at the check.
    pub usage: TokenUsage,
    /// The breached scope's reservations at the check.
    pub reserved: TokenUsage,
    /// What the request asked for.
    pub requested: TokenUsage,
    /// The request's projected duration, in milliseconds.
    pub duration_ms: Option<i64>,
    /// The store's clock at the check.
    pub now: DateTime<Utc>,
}

/// What a checkpoint asks the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreRequest {
    /// The checkpoint.
    pub phase: BudgetPhase,
    /// The projected tokens.
    pub tokens: TokenUsage,
    /// The projected duration, if the request gave one.
    pub duration: Option<TimeDelta>,
    /// Check, reserve or only ask.
    pub mode: AdmitMode,
    /// How long a reservation holds its tokens without being settled.
    pub lease: TimeDelta,
}

/// What a checkpoint does besides checking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AdmitMode {
    /// Latch a failure and count refused tokens.
    Check,
    /// As `Check`, and on success reserve the tokens under a lease.
    Reserve,
    /// Only ask: no latch, no count, no reservation.
    Probe,
}

/// A store's answer to a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Passed; `reservation` is the new reservation's number for
    /// [`AdmitMode::Reserve`].
    Passed {
        /// The path's books after the checkpoint.
        state: PathState,
        /// The reservation taken, for [`AdmitMode::Reserve`].
        reservation: Option<u64>,
    },
    /// Refused: the breach (new, or latched earlier on a scope of the path).
    Refused {
        /// The path's books after the checkpoint.
        state: PathState,
        /// The breach.
        breach: BreachRecord,
    },
}

/// How long a run's keys live in a store that expires them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    /// Kept this long after the run's deadline (a run with a deadline).
    pub grace: TimeDelta,
    /// Kept this long after the last write (a run without a deadline).
    pub idle: TimeDelta,
}

impl Default for Expiry {
    /// One hour of grace after the deadline; a day after the last write
    /// without a deadline.
    fn default() -> Self {
        Self {
            grace: TimeDelta::hours(1),
            idle: TimeDelta::days(1),
        }
    }
}

/// A store operation that failed: the store was unreachable, answered with an
/// error, or holds something this version cannot read. Never a budget
/// decision: see [`FailurePolicy`] for what a tracker does with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be reached or answered with an error.
    #[error("budget store unavailable during {operation}: {message}")]
    Unavailable {
        /// The operation (`admit`, `settle`, `record`, ...).
        operation: &'static str,
        /// What the store or the connection said.
        message: String,
    },
    /// The run does not exist in the store (never created, or expired).
    #[error("run '{run}' does not exist in the budget store (never created, or expired)")]
    UnknownRun {
        /// The run's name.
        run: String,
    },
    /// The scope does not exist in the run.
    #[error("run '{run}' has no scope {scope}")]
    UnknownScope {
        /// The run's name.
        run: String,
        /// The scope's number.
        scope: u64,
    },
    /// A run of that name exists already.
    #[error("run '{run}' already exists in the budget store; attach to it instead")]
    RunExists {
        /// The run's name.
        run: String,
    },
    /// A count or a limit the store cannot compare exactly (the Redis store
    /// compares in doubles: at most 2^53 − 1).
    #[error(
        "budget store cannot hold {value} tokens exactly during {operation} (at most 9007199254740991)"
    )]
    OutOfRange {
        /// The operation.
        operation: &'static str,
        /// The rejected count or limit.
        value: i64,
    },
    /// The store holds data this version cannot read.
    #[error("budget store data for run '{run}' is malformed: {message}")]
    Malformed {
        /// The run's name.
        run: String,
        /// What was wrong.
        message: String,
    },
}

/// The atomic operations a [`SharedTracker`] needs from the place that keeps
/// a run's books. Every method is one atomic step: no other caller sees a
/// state between its reads and its writes.
///
/// Implementations decide with the rules of `spec/15-run-budget.md` at their
/// own clock. [`MemoryStore`] is the reference; the behaviour suite in
/// `tests/shared_budget.rs` runs against every store.
pub trait RunStore: Send + Sync + fmt::Debug {
    /// The store's clock.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`].
    fn now(&self) -> Result<DateTime<Utc>, StoreError>;

    /// Creates the run `run` with its root scope (number 0).
    ///
    /// # Errors
    /// [`StoreError::RunExists`], [`StoreError::Unavailable`].
    fn create_run(&self, run: &str, budget: &RunBudget) -> Result<(), StoreError>;

    /// Creates a child scope of `parent`; returns its number.
    ///
    /// # Errors
    /// [`StoreError::UnknownRun`] / [`StoreError::UnknownScope`],
    /// [`StoreError::Unavailable`].
    fn create_child(
        &self,
        run: &str,
        parent: u64,
        budget: &RunBudget,
        label: Option<&str>,
    ) -> Result<u64, StoreError>;

    /// The scopes from the root down to `scope`.
    ///
    /// # Errors
    /// [`StoreError::UnknownRun`] / [`StoreError::UnknownScope`],
    /// [`StoreError::Unavailable`], [`StoreError::Malformed`].
    fn scope_path(&self, run: &str, scope: u64) -> Result<Vec<ScopeInfo>, StoreError>;

    /// A checkpoint on `path` (scope numbers, root first; the last is the
    /// requester): first the leases that ran out are given back, then the
    /// latched breaches and the rules are checked root first; a new breach
    /// is latched on its scope and the requested tokens counted as refused
    /// on the whole path (not for [`AdmitMode::Probe`]); on success with
    /// [`AdmitMode::Reserve`] the tokens are reserved on the whole path
    /// under a lease.
    ///
    /// # Errors
    /// [`StoreError`] when the store fails: no decision was made.
    fn admit(
        &self,
        run: &str,
        path: &[u64],
        requester_label: Option<&str>,
        request: &StoreRequest,
    ) -> Result<Admission, StoreError>;

    /// Ends a reservation: its tokens leave `reserved` on every scope of the
    /// path and, unless `actual` is `None` (released), `actual` is added to
    /// `used`. A reservation whose lease ran out was given back already; its
    /// `actual` usage is still recorded (the tokens were spent).
    ///
    /// **Exactly once:** a reservation is settled (or released) once; a
    /// second call with the same number — a retry after a reply was lost —
    /// changes nothing and succeeds. Retry a failed settle with the same
    /// reservation number, never with [`record`](Self::record).
    ///
    /// # Errors
    /// [`StoreError`].
    fn settle(
        &self,
        run: &str,
        path: &[u64],
        reservation: u64,
        actual: Option<TokenUsage>,
    ) -> Result<(), StoreError>;

    /// Adds usage to every scope of the path, without a checkpoint.
    ///
    /// # Errors
    /// [`StoreError`].
    fn record(&self, run: &str, path: &[u64], usage: TokenUsage) -> Result<(), StoreError>;

    /// [`record`](Self::record) once per `request` (a non-empty id the
    /// caller chooses, unique within the run): a second call with the same
    /// id — a retry after a reply was lost — changes nothing. Returns
    /// whether this call counted the usage (`false`: it was counted before).
    ///
    /// # Errors
    /// [`StoreError`]; [`StoreError::Malformed`] for an empty id.
    fn record_once(
        &self,
        run: &str,
        path: &[u64],
        request: &str,
        usage: TokenUsage,
    ) -> Result<bool, StoreError>;

    /// The books of the path now (leases that ran out are given back first).
    ///
    /// # Errors
    /// [`StoreError`].
    fn read(&self, run: &str, path: &[u64]) -> Result<PathState, StoreError>;

    /// The finalization checkpoint: a latched breach on the path, or the
    /// first scope whose settled usage is over a ceiling (latched).
    ///
    /// # Errors
    /// [`StoreError`].
    fn finalize(
        &self,
        run: &str,
        path: &[u64],
        requester_label: Option<&str>,
    ) -> Result<Admission, StoreError>;

    /// Applies `update` to the adaptive-budget history stored under `key`
    /// (a fresh [`UsageRecorder`](crate::UsageRecorder) if none) and stores
    /// the result, atomically with respect to every other caller; returns the
    /// stored recorder. `update` may run more than once (optimistic
    /// retries); nothing is stored when it fails.
    ///
    /// # Errors
    /// [`StoreError`], or the [`UsageError`](crate::UsageError) of `update`
    /// as [`StoreError::Malformed`]'s sibling: see [`HistoryError`].
    fn update_history(
        &self,
        key: &str,
        update: &mut dyn FnMut(&mut crate::UsageRecorder) -> Result<(), crate::UsageError>,
    ) -> Result<crate::UsageRecorder, HistoryError>;
}

/// The old name of [`RunStore`] (renamed so that a name holding "Budget"
/// alone means the context budget; ARCHITECTURE.md, Glossary). Every
/// [`RunStore`] is one, so bounds and `dyn BudgetStore` keep compiling;
/// an implementation is written `impl RunStore for ...`.
#[deprecated(since = "0.2.0", note = "renamed `RunStore`")]
pub trait BudgetStore: RunStore {}

#[allow(deprecated)]
impl<T: RunStore + ?Sized> BudgetStore for T {}

/// Why a shared adaptive history could not be updated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The update itself was refused (the recorder is unchanged).
    #[error(transparent)]
    Usage(#[from] crate::UsageError),
}

impl From<HistoryError> for RunError {
    fn from(e: HistoryError) -> Self {
        match e {
            HistoryError::Usage(u) => RunError::Usage(u),
            HistoryError::Store(s) => store_error(BudgetPhase::Budget, &s),
        }
    }
}

/// A store failure as the [`RunError`](RunError) a caller
/// sees, tagged with the checkpoint it happened in.
/// `record_once`'s check, the same in every store: a request id is never
/// empty ([`StoreError::Malformed`] otherwise).
pub(crate) fn require_request_id(run: &str, request: &str) -> Result<(), StoreError> {
    if request.is_empty() {
        return Err(StoreError::Malformed {
            run: run.to_string(),
            message: "record_once needs a non-empty request id".to_string(),
        });
    }
    Ok(())
}

pub(crate) fn store_error(phase: BudgetPhase, e: &StoreError) -> RunError {
    RunError::StoreFailed {
        phase,
        message: e.to_string(),
    }
}
