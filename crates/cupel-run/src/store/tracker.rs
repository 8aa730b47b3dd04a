//! [`SharedTracker`]: the run-budget checkpoints over a [`RunStore`].

use std::fmt;
use std::sync::Arc;

use crate::{
    BreachState, BudgetExceededError, BudgetPhase, RunBudget, RunError, ScopeId, TokenUsage,
};
use chrono::TimeDelta;

use super::{
    Admission, AdmitMode, BreachRecord, PathState, RunStore, ScopeInfo, StoreError, StoreRequest,
    store_error,
};
use crate::request::RunRequest;
use crate::rules::{self, Books};
use crate::run_tracker::RunTracker;
use crate::tracker::{RunSnapshot, emit};

/// What a checkpoint does when the store itself fails (unreachable, timing
/// out, answering with an error).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// The checkpoint fails with [`RunError::StoreFailed`] (tagged
    /// with its phase): the request is not made. The default: a budget that
    /// cannot be checked is never treated as unlimited.
    #[default]
    Closed,
    /// The checkpoint passes *unverified*: it returns
    /// [`Checkpoint::Unverified`] with the store's error (and a reservation
    /// that holds nothing), so the caller can go on and log it. Choose it
    /// only where an outage of the store must not stop the agents, and
    /// accept that the ceilings are not enforced while it lasts.
    Open,
}

/// How a [`SharedTracker`] behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedOptions {
    /// How long a reservation holds its tokens without being settled; after
    /// that the store gives them back (a worker that died mid-call does not
    /// hold them forever). Longer than the slowest call you make. Default 10
    /// minutes.
    pub lease: TimeDelta,
    /// What checkpoints do when the store fails. Default
    /// [`FailurePolicy::Closed`].
    pub on_store_failure: FailurePolicy,
}

impl Default for SharedOptions {
    fn default() -> Self {
        Self {
            lease: TimeDelta::minutes(10),
            on_store_failure: FailurePolicy::Closed,
        }
    }
}

impl SharedOptions {
    /// Sets [`lease`](Self::lease).
    #[must_use]
    pub fn lease(mut self, lease: TimeDelta) -> Self {
        self.lease = lease;
        self
    }

    /// Sets [`on_store_failure`](Self::on_store_failure).
    #[must_use]
    pub fn on_store_failure(mut self, policy: FailurePolicy) -> Self {
        self.on_store_failure = policy;
        self
    }
}

/// The outcome of a checkpoint that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Checkpoint {
    /// The store checked the request and it fits.
    Passed(RunSnapshot),
    /// The store failed and the tracker fails open
    /// ([`FailurePolicy::Open`]): nothing was checked.
    Unverified(StoreError),
}

impl Checkpoint {
    /// The snapshot, when the store checked the request.
    pub fn snapshot(&self) -> Option<&RunSnapshot> {
        match self {
            Checkpoint::Passed(s) => Some(s),
            Checkpoint::Unverified(_) => None,
        }
    }
}

/// A run-budget tracker whose books live in a [`RunStore`], so that every
/// process of a run — and every machine — charges the same budget.
///
/// The checkpoints and their rules are those of
/// [`LocalTracker`](crate::LocalTracker); each one is a single atomic step
/// in the store. The differences: every call can meet a store failure (see
/// [`FailurePolicy`]), reservations hold their tokens under a lease
/// ([`SharedOptions::lease`]), and time is the store's clock. Cloning is
/// cheap; a clone is the same scope.
#[derive(Clone)]
pub struct SharedTracker {
    store: Arc<dyn RunStore>,
    run: Arc<str>,
    /// The scopes from the root down to this one.
    path: Arc<[ScopeInfo]>,
    ids: Arc<[u64]>,
    options: SharedOptions,
}

impl fmt::Debug for SharedTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedTracker")
            .field("run", &self.run)
            .field("scope", &self.scope_id())
            .field("depth", &self.depth())
            .field("label", &self.label())
            .field("store", &self.store)
            .finish()
    }
}

fn failed(phase: BudgetPhase) -> impl Fn(StoreError) -> RunError {
    move |e| store_error(phase, &e)
}

impl SharedTracker {
    /// Opens the run `run` in `store` with `budget` as its root scope (the
    /// orchestrator's call; workers [`attach`](Self::attach)). The deadline
    /// is checked at the store's clock.
    ///
    /// # Errors
    /// [`RunError::Exceeded`] (phase `preflight`) when the
    /// deadline is not after the store's clock;
    /// [`RunError::StoreFailed`] when the store fails or the run
    /// exists already.
    pub fn create(
        store: Arc<dyn RunStore>,
        run: &str,
        budget: RunBudget,
    ) -> Result<Self, RunError> {
        let phase = BudgetPhase::Preflight;
        let now = store.now().map_err(failed(phase))?;
        budget.validate(now, &ScopeId::ROOT)?;
        store.create_run(run, &budget).map_err(failed(phase))?;
        Ok(Self {
            store,
            run: Arc::from(run),
            path: Arc::from([ScopeInfo {
                id: 0,
                budget,
                label: None,
            }]),
            ids: Arc::from([0u64]),
            options: SharedOptions::default(),
        })
    }

    /// Attaches to scope `scope` (0 for the root) of the existing run `run`:
    /// what a worker process does with the run name and scope number it was
    /// handed.
    ///
    /// # Errors
    /// [`RunError::StoreFailed`] when the store fails or has no such
    /// run or scope.
    pub fn attach(store: Arc<dyn RunStore>, run: &str, scope: u64) -> Result<Self, RunError> {
        let path = store
            .scope_path(run, scope)
            .map_err(failed(BudgetPhase::Preflight))?;
        let ids: Vec<u64> = path.iter().map(|s| s.id).collect();
        Ok(Self {
            store,
            run: Arc::from(run),
            path: Arc::from(path),
            ids: Arc::from(ids),
            options: SharedOptions::default(),
        })
    }

    /// The same scope with other options (children inherit them).
    #[must_use]
    pub fn with_options(mut self, options: SharedOptions) -> Self {
        self.options = options;
        self
    }

    /// The options in force.
    pub fn options(&self) -> SharedOptions {
        self.options
    }

    /// The run's name in the store.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// This scope's number in the run: hand it, with [`run`](Self::run), to
    /// the process that should [`attach`](Self::attach) to it.
    pub fn scope_id(&self) -> u64 {
        self.ids.last().copied().unwrap_or(0)
    }

    /// Settles reservation number `reservation` (see
    /// [`SharedReservation::id`]) with `actual`: the retry for a
    /// [`SharedReservation::settle`] that failed. Exactly once: when the
    /// first settle did reach the store and only its reply was lost, this
    /// counts nothing again.
    ///
    /// # Errors
    /// [`RunError::StoreFailed`]: retry it the same way.
    pub fn settle_reservation(&self, reservation: u64, actual: TokenUsage) -> Result<(), RunError> {
        self.store
            .settle(&self.run, &self.ids, reservation, Some(actual))
            .map_err(failed(BudgetPhase::Response))
    }

    /// Records usage on this scope and its ancestors once per `request_id`
    /// (non-empty, unique within the run: a provider's response id serves):
    /// retried after a lost reply, it counts nothing again. Returns whether
    /// this call counted it.
    ///
    /// # Errors
    /// [`RunError::StoreFailed`] (the usage may or may not be
    /// recorded: retry with the same id).
    pub fn record_once(&self, request_id: &str, usage: TokenUsage) -> Result<bool, RunError> {
        self.store
            .record_once(&self.run, &self.ids, request_id, usage)
            .map_err(failed(BudgetPhase::Budget))
    }

    fn open_child(&self, budget: RunBudget, label: Option<&str>) -> Result<Self, RunError> {
        let phase = BudgetPhase::Preflight;
        let now = self.store.now().map_err(failed(phase))?;
        let scope = ScopeId {
            depth: self.path.len(),
            label: label.map(Arc::from),
        };
        budget.validate(now, &scope)?;
        let id = self
            .store
            .create_child(&self.run, self.scope_id(), &budget, label)
            .map_err(failed(phase))?;
        let mut path = self.path.to_vec();
        path.push(ScopeInfo {
            id,
            budget,
            label: label.map(str::to_string),
        });
        let mut ids = self.ids.to_vec();
        ids.push(id);
        Ok(Self {
            store: Arc::clone(&self.store),
            run: Arc::clone(&self.run),
            path: Arc::from(path),
            ids: Arc::from(ids),
            options: self.options,
        })
    }

    /// The error a breach record describes, as the in-process tracker would
    /// have built it.
    fn exceeded(&self, b: &BreachRecord) -> BudgetExceededError {
        let scope = self.path.get(b.scope_depth);
        let state = BreachState {
            budget: scope.map_or(RunBudget::unlimited(), |s| s.budget),
            usage: b.usage,
            reserved: b.reserved,
            requested: b.requested,
            requested_duration: b.duration_ms.map(TimeDelta::milliseconds),
            now: Some(b.now),
            scope: ScopeId {
                depth: b.scope_depth,
                label: scope.and_then(|s| s.label.as_deref()).map(Arc::from),
            },
            requester: ScopeId {
                depth: b.requester_depth,
                label: b.requester_label.as_deref().map(Arc::from),
            },
        };
        BudgetExceededError::new(b.phase, b.dimension, b.breach, &state)
    }

    fn snapshot_of(&self, state: &PathState) -> RunSnapshot {
        let books: Vec<Books> = self
            .path
            .iter()
            .zip(&state.scopes)
            .map(|(info, b)| Books {
                budget: info.budget,
                used: b.used,
                reserved: b.reserved,
            })
            .collect();
        let halted = state.scopes.iter().any(|b| b.halted);
        rules::snapshot(&books, halted, state.now)
    }

    /// Runs one checkpoint and turns the answer into the caller's result.
    fn checkpoint(
        &self,
        request: &RunRequest,
        mode: AdmitMode,
    ) -> Result<(Checkpoint, Option<u64>), RunError> {
        let phase = request.phase();
        let asked = StoreRequest {
            phase,
            tokens: request.tokens(),
            duration: request.duration(),
            mode,
            lease: self.options.lease,
        };
        match self.store.admit(&self.run, &self.ids, self.label(), &asked) {
            Ok(Admission::Passed { state, reservation }) => {
                let snapshot = self.snapshot_of(&state);
                if mode != AdmitMode::Probe {
                    emit(phase, &snapshot, None);
                }
                Ok((Checkpoint::Passed(snapshot), reservation))
            }
            Ok(Admission::Refused { state, breach }) => {
                let err = self.exceeded(&breach);
                if mode != AdmitMode::Probe {
                    emit(phase, &self.snapshot_of(&state), Some(&err));
                }
                Err(RunError::Exceeded(err))
            }
            Err(e) => self.store_failed(phase, e).map(|c| (c, None)),
        }
    }

    fn store_failed(&self, phase: BudgetPhase, e: StoreError) -> Result<Checkpoint, RunError> {
        match self.options.on_store_failure {
            FailurePolicy::Open => Ok(Checkpoint::Unverified(e)),
            FailurePolicy::Closed => Err(store_error(phase, &e)),
        }
    }

    fn own_books(&self) -> Result<super::ScopeBooks, RunError> {
        let state = self
            .store
            .read(&self.run, &self.ids)
            .map_err(failed(BudgetPhase::Budget))?;
        Ok(state.scopes.last().copied().unwrap_or_default())
    }

    /// Records one cycle of per-agent usage into the adaptive-budget history
    /// `key` kept in the same store, so a fleet of workers suggests one
    /// budget from everyone's usage; returns the history after the cycle.
    ///
    /// # Errors
    /// [`RunError::StoreFailed`] when the store fails;
    /// [`RunError::Usage`] (the recorder's own [`UsageError`](crate::UsageError))
    /// when the cycle is invalid, and then nothing is stored.
    pub fn record_history_cycle(
        &self,
        key: &str,
        usage: &[(&str, i64)],
    ) -> Result<crate::UsageRecorder, RunError> {
        let mut apply = |r: &mut crate::UsageRecorder| r.record_cycle(usage.iter().copied());
        Ok(self.store.update_history(key, &mut apply)?)
    }
}

/// The checkpoints and books of a shared run budget: the rules of the
/// in-process [`LocalTracker`](crate::LocalTracker), each one a single
/// atomic step in the store, judged at the store's clock.
impl RunTracker for SharedTracker {
    type Reservation = SharedReservation;

    /// `0` for the root, `n` for a child `n` levels down.
    fn depth(&self) -> usize {
        self.path.len().saturating_sub(1)
    }

    /// The label given by [`child_named`](Self::child_named).
    fn label(&self) -> Option<&str> {
        self.path.last().and_then(|s| s.label.as_deref())
    }

    /// A child scope with its own budget inside this one (see
    /// [`LocalTracker::child`](crate::LocalTracker::child)).
    ///
    /// # Errors
    /// As [`child_named`](Self::child_named).
    fn child(&self, budget: RunBudget) -> Result<Self, RunError> {
        self.open_child(budget, None)
    }

    /// A child scope labelled `label` (errors name it).
    ///
    /// # Errors
    /// [`RunError::Exceeded`] (phase `preflight`) for a deadline
    /// not after the store's clock; [`RunError::StoreFailed`] when
    /// the store fails.
    fn child_named(&self, label: &str, budget: RunBudget) -> Result<Self, RunError> {
        self.open_child(budget, Some(label))
    }

    /// The pre-flight checkpoint (see
    /// [`LocalTracker::preflight`](crate::LocalTracker::preflight)).
    ///
    /// # Errors
    /// [`RunError::Exceeded`], or
    /// [`RunError::StoreFailed`] when the store fails and the
    /// tracker fails closed.
    fn preflight(&self) -> Result<Checkpoint, RunError> {
        let request = RunRequest::new(BudgetPhase::Preflight, TokenUsage::ZERO);
        self.checkpoint(&request, AdmitMode::Check).map(|(c, _)| c)
    }

    /// [`check`](Self::check) for a [`RunRequest`] (with a projected
    /// duration, judged at the store's clock).
    ///
    /// # Errors
    /// As [`preflight`](Self::preflight).
    fn check_request(&self, request: &RunRequest) -> Result<Checkpoint, RunError> {
        self.checkpoint(request, AdmitMode::Check).map(|(c, _)| c)
    }

    /// Asks whether `request` would pass, without latching, counting or
    /// reserving (see [`LocalTracker::would_fit`](crate::LocalTracker::would_fit)).
    ///
    /// # Errors
    /// As [`preflight`](Self::preflight).
    fn would_fit(&self, request: &RunRequest) -> Result<Checkpoint, RunError> {
        self.checkpoint(request, AdmitMode::Probe).map(|(c, _)| c)
    }

    /// [`reserve`](Self::reserve) for a [`RunRequest`].
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    fn reserve_request(&self, request: &RunRequest) -> Result<SharedReservation, RunError> {
        let (checkpoint, id) = self.checkpoint(request, AdmitMode::Reserve)?;
        Ok(SharedReservation {
            tracker: self.clone(),
            id,
            amount: request.tokens(),
            unverified: matches!(checkpoint, Checkpoint::Unverified(_)),
            open: true,
        })
    }

    /// The finalization checkpoint (see
    /// [`LocalTracker::finalize`](crate::LocalTracker::finalize)).
    ///
    /// # Errors
    /// As [`preflight`](Self::preflight).
    fn finalize(&self) -> Result<Checkpoint, RunError> {
        let phase = BudgetPhase::Response;
        match self.store.finalize(&self.run, &self.ids, self.label()) {
            Ok(Admission::Passed { state, .. }) => {
                let snapshot = self.snapshot_of(&state);
                emit(phase, &snapshot, None);
                Ok(Checkpoint::Passed(snapshot))
            }
            Ok(Admission::Refused { state, breach }) => {
                let err = self.exceeded(&breach);
                emit(phase, &self.snapshot_of(&state), Some(&err));
                Err(RunError::Exceeded(err))
            }
            Err(e) => self.store_failed(phase, e),
        }
    }

    /// Records usage on this scope and its ancestors without a checkpoint
    /// (tokens already spent).
    ///
    /// # Errors
    /// [`RunError::StoreFailed`] whatever the policy: the usage was
    /// not recorded, so retry or log it.
    fn record(&self, usage: TokenUsage) -> Result<(), RunError> {
        self.store
            .record(&self.run, &self.ids, usage)
            .map_err(failed(BudgetPhase::Budget))
    }

    /// The scope's state at the store's clock.
    ///
    /// # Errors
    /// [`RunError::StoreFailed`].
    fn snapshot(&self) -> Result<RunSnapshot, RunError> {
        let state = self
            .store
            .read(&self.run, &self.ids)
            .map_err(failed(BudgetPhase::Budget))?;
        Ok(self.snapshot_of(&state))
    }

    /// Settled usage of this scope (and its children).
    ///
    /// # Errors
    /// [`RunError::StoreFailed`].
    fn usage(&self) -> Result<TokenUsage, RunError> {
        let b = self.own_books()?;
        Ok(TokenUsage::saturating_from_i128(b.used[0], b.used[1]))
    }

    /// Tokens of refused requests of this scope (and its children).
    ///
    /// # Errors
    /// [`RunError::StoreFailed`].
    fn refused(&self) -> Result<TokenUsage, RunError> {
        let b = self.own_books()?;
        Ok(TokenUsage::saturating_from_i128(b.refused[0], b.refused[1]))
    }

    /// [`usage`](Self::usage) plus [`refused`](Self::refused): what the scope
    /// asked for (the adaptive budget's input, spec A-17).
    ///
    /// # Errors
    /// [`RunError::StoreFailed`].
    fn demand(&self) -> Result<TokenUsage, RunError> {
        let b = self.own_books()?;
        Ok(TokenUsage::saturating_from_i128(
            b.used[0] + b.refused[0],
            b.used[1] + b.refused[1],
        ))
    }
}

impl SharedTracker {
    /// A meter for a provider's cumulative usage counter that starts at
    /// zero, recording through this scope (see
    /// [`UsageMeter`](crate::UsageMeter) for the in-process form).
    pub fn meter(&self) -> SharedUsageMeter {
        self.meter_from(TokenUsage::ZERO)
    }

    /// A meter for a counter that already reads `baseline` (a worker taking
    /// over a session whose usage so far was recorded by another).
    pub fn meter_from(&self, baseline: TokenUsage) -> SharedUsageMeter {
        SharedUsageMeter {
            tracker: self.clone(),
            last: baseline,
        }
    }
}

/// Feeds a provider's running usage total into a [`SharedTracker`],
/// recording only the increase since the last observation. The meter
/// lives in the process that reads the counter; a worker that takes a
/// session over starts its own with [`SharedTracker::meter_from`].
#[derive(Debug)]
pub struct SharedUsageMeter {
    tracker: SharedTracker,
    last: TokenUsage,
}

impl SharedUsageMeter {
    /// The last total observed (the baseline before any observation).
    pub fn last_total(&self) -> TokenUsage {
        self.last
    }

    /// Records the increase since the last observation and returns it.
    ///
    /// # Errors
    /// [`RunError::UsageCounterDecreased`] when the counter went down, and
    /// [`RunError::StoreFailed`] when the store failed; in both cases
    /// nothing is recorded and the meter keeps its last total, so the same
    /// total can be observed again.
    pub fn observe_total(&mut self, total: TokenUsage) -> Result<TokenUsage, RunError> {
        let delta = crate::meter::increase(self.last, total)?;
        self.tracker.record(delta)?;
        self.last = total;
        Ok(delta)
    }

    /// Settles `reservation` with the increase since the last observation.
    ///
    /// # Errors
    /// As [`observe_total`](Self::observe_total); on a decreased counter the
    /// reservation is released (dropped).
    pub fn settle_total(
        &mut self,
        reservation: SharedReservation,
        total: TokenUsage,
    ) -> Result<TokenUsage, RunError> {
        let delta = crate::meter::increase(self.last, total)?;
        reservation.settle(delta)?;
        self.last = total;
        Ok(delta)
    }
}

/// Tokens held on a shared run budget for one request, under a lease.
///
/// [`settle`](Self::settle) it with the usage the provider reported, or
/// [`release`](Self::release) it. Dropping it releases it as well (best
/// effort: if the store cannot be reached then, the lease gives the tokens
/// back when it runs out).
#[must_use = "dropping a reservation releases it; settle it with the actual usage"]
pub struct SharedReservation {
    tracker: SharedTracker,
    /// The store's number for it; `None` when nothing was reserved (the
    /// checkpoint passed unverified).
    id: Option<u64>,
    amount: TokenUsage,
    unverified: bool,
    open: bool,
}

impl fmt::Debug for SharedReservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedReservation")
            .field("id", &self.id)
            .field("amount", &self.amount)
            .field("unverified", &self.unverified)
            .field("scope", &self.tracker.scope_id())
            .finish()
    }
}

impl SharedReservation {
    /// The reserved (projected) usage.
    pub fn amount(&self) -> TokenUsage {
        self.amount
    }

    /// Whether the checkpoint passed without the store ([`FailurePolicy::Open`]):
    /// nothing is held.
    pub fn is_unverified(&self) -> bool {
        self.unverified
    }

    /// The store's number for the reservation (`None` when the checkpoint
    /// passed unverified and nothing is held): keep it to retry a failed
    /// [`settle`](Self::settle) with [`SharedTracker::settle_reservation`].
    pub fn id(&self) -> Option<u64> {
        self.id
    }

    /// Replaces the reservation with the usage actually reported.
    ///
    /// # Errors
    /// [`RunError::StoreFailed`]: the settle may or may not have
    /// reached the store (a lost reply looks the same as a lost request).
    /// Retry with [`SharedTracker::settle_reservation`] and this
    /// reservation's [`id`](Self::id): the store settles a reservation once,
    /// so the retry never counts the usage twice. Never retry with
    /// `record`, which would. (An unverified reservation has no id; its
    /// usage goes through `record`: retry it with
    /// [`SharedTracker::record_once`] and an id of your own.)
    pub fn settle(mut self, actual: TokenUsage) -> Result<(), RunError> {
        self.open = false;
        let t = &self.tracker;
        match self.id {
            Some(id) => t.store.settle(&t.run, &t.ids, id, Some(actual)),
            None => t.store.record(&t.run, &t.ids, actual),
        }
        .map_err(failed(BudgetPhase::Response))
    }

    /// Gives the tokens back without recording usage.
    ///
    /// # Errors
    /// [`RunError::StoreFailed`] (the lease gives them back later).
    pub fn release(mut self) -> Result<(), RunError> {
        self.open = false;
        self.release_now()
    }

    fn release_now(&self) -> Result<(), RunError> {
        let t = &self.tracker;
        match self.id {
            Some(id) => t
                .store
                .settle(&t.run, &t.ids, id, None)
                .map_err(failed(BudgetPhase::Response)),
            None => Ok(()),
        }
    }
}

impl Drop for SharedReservation {
    fn drop(&mut self) {
        if self.open {
            // Best effort: a failure here is covered by the lease.
            let _ = self.release_now();
        }
    }
}
