//! [`MemoryStore`]: the [`RunStore`] contract over in-process
//! [`LocalTracker`]s.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::{BudgetExceededError, RunBudget, TimeProvider, TokenUsage};
use chrono::{DateTime, Utc};

use super::{
    Admission, AdmitMode, BreachRecord, HistoryError, PathState, RunStore, ScopeBooks, ScopeInfo,
    StoreError, StoreRequest,
};
use crate::request::RunRequest;
use crate::tracker::{LocalTracker, Reservation};
use crate::{UsageError, UsageRecorder};

/// A [`RunStore`] in this process's memory, deciding at the clock it is
/// given.
///
/// It is the in-process [`LocalTracker`] behind the store contract: each
/// scope of a run is a tracker (the root, and a child per
/// [`create_child`](RunStore::create_child)), and every operation is the
/// tracker's own, so the rules, the latching and the books are the ones the
/// in-process tracker has always had — one implementation, whichever API a
/// program uses. What the store adds is what a tracker in one process never
/// needed: reservations named by number and held under a lease (given back
/// at the first operation on the run after the lease ends), scopes named by
/// number, and the adaptive history under a key.
///
/// Use it for tests and for single-process programs written against
/// [`SharedTracker`](super::SharedTracker); the behaviour suite holds every
/// other store to its answers. Runs never expire. The trackers emit their
/// `tracing` events as usual, so with the `tracing` feature a checkpoint
/// through a `SharedTracker` on this store is reported twice (once by each).
pub struct MemoryStore {
    clock: Arc<dyn TimeProvider>,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    runs: BTreeMap<String, Run>,
    history: BTreeMap<String, UsageRecorder>,
}

struct Run {
    /// Scope `n` is `scopes[n]`; the root is 0.
    scopes: Vec<Scope>,
    /// Open reservations by number, with the end of their lease.
    holds: BTreeMap<u64, (Reservation, DateTime<Utc>)>,
    next_hold: u64,
    /// Reservations settled or released (each counts once).
    settled: BTreeSet<u64>,
    /// Request ids of `record_once` calls that counted.
    recorded: BTreeSet<String>,
}

struct Scope {
    tracker: LocalTracker,
    info: ScopeInfo,
    parent: Option<u64>,
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("MemoryStore")
            .field("runs", &inner.runs.len())
            .finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// An empty store deciding at `clock`.
    pub fn new(clock: impl TimeProvider + 'static) -> Self {
        Self {
            clock: Arc::new(clock),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing in a critical section panics; a poisoned lock still holds
        // consistent books.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn unknown_run(run: &str) -> StoreError {
    StoreError::UnknownRun {
        run: run.to_string(),
    }
}

fn malformed(run: &str, message: impl Into<String>) -> StoreError {
    StoreError::Malformed {
        run: run.to_string(),
        message: message.into(),
    }
}

/// The record of an error a tracker returned.
fn record_of(e: &BudgetExceededError, now: DateTime<Utc>) -> BreachRecord {
    BreachRecord {
        phase: e.phase(),
        dimension: e.dimension(),
        breach: e.breach(),
        scope_depth: e.scope_depth(),
        requester_depth: e.requester_depth(),
        requester_label: e.requester_label().map(str::to_string),
        usage: e.usage(),
        reserved: e.reserved(),
        requested: e.requested(),
        duration_ms: e.requested_duration().map(|d| d.num_milliseconds()),
        now: e.now().unwrap_or(now),
    }
}

impl Run {
    fn scope(&self, run: &str, id: u64) -> Result<&Scope, StoreError> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.scopes.get(i))
            .ok_or_else(|| StoreError::UnknownScope {
                run: run.to_string(),
                scope: id,
            })
    }

    /// The tracker of the last scope of `path`, after checking that `path`
    /// is the chain from the root to it.
    fn tracker(&self, run: &str, path: &[u64]) -> Result<&LocalTracker, StoreError> {
        let Some(&last) = path.last() else {
            return Err(malformed(run, "empty scope path"));
        };
        let mut expected = Some(last);
        for &id in path.iter().rev() {
            if expected != Some(id) {
                return Err(malformed(
                    run,
                    format!("scope {id} is not on the path to scope {last}"),
                ));
            }
            expected = self.scope(run, id)?.parent;
        }
        if expected.is_some() {
            return Err(malformed(run, "the path does not start at the root"));
        }
        Ok(&self.scope(run, last)?.tracker)
    }

    /// Gives back the reservations whose lease ended at or before `now`
    /// (dropping a reservation releases it).
    fn expire_holds(&mut self, now: DateTime<Utc>) {
        self.holds.retain(|_, (_, until)| *until > now);
    }

    fn state(&self, run: &str, path: &[u64], now: DateTime<Utc>) -> Result<PathState, StoreError> {
        let scopes = path
            .iter()
            .map(|&id| {
                let t = &self.scope(run, id)?.tracker;
                let (used, reserved, refused) = (t.usage(), t.snapshot().reserved, t.refused());
                Ok(ScopeBooks {
                    used: [used.input().into(), used.output().into()],
                    reserved: [reserved.input().into(), reserved.output().into()],
                    refused: [refused.input().into(), refused.output().into()],
                    halted: t.is_halted(),
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(PathState { now, scopes })
    }
}

impl RunStore for MemoryStore {
    fn now(&self) -> Result<DateTime<Utc>, StoreError> {
        Ok(self.clock.now())
    }

    fn create_run(&self, run: &str, budget: &RunBudget) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if inner.runs.contains_key(run) {
            return Err(StoreError::RunExists {
                run: run.to_string(),
            });
        }
        let tracker = LocalTracker::new(*budget, Arc::clone(&self.clock))
            .map_err(|e| malformed(run, e.to_string()))?;
        inner.runs.insert(
            run.to_string(),
            Run {
                scopes: vec![Scope {
                    tracker,
                    info: ScopeInfo {
                        id: 0,
                        budget: *budget,
                        label: None,
                    },
                    parent: None,
                }],
                holds: BTreeMap::new(),
                next_hold: 1,
                settled: BTreeSet::new(),
                recorded: BTreeSet::new(),
            },
        );
        Ok(())
    }

    fn create_child(
        &self,
        run: &str,
        parent: u64,
        budget: &RunBudget,
        label: Option<&str>,
    ) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        let parent_tracker = &r.scope(run, parent)?.tracker;
        let child = match label {
            Some(l) => parent_tracker.child_named(l, *budget),
            None => parent_tracker.child(*budget),
        }
        .map_err(|e| malformed(run, e.to_string()))?;
        let id = r.scopes.len() as u64;
        r.scopes.push(Scope {
            tracker: child,
            info: ScopeInfo {
                id,
                budget: *budget,
                label: label.map(str::to_string),
            },
            parent: Some(parent),
        });
        Ok(id)
    }

    fn scope_path(&self, run: &str, scope: u64) -> Result<Vec<ScopeInfo>, StoreError> {
        let inner = self.lock();
        let r = inner.runs.get(run).ok_or_else(|| unknown_run(run))?;
        let mut out = Vec::new();
        let mut at = Some(scope);
        while let Some(id) = at {
            let s = r.scope(run, id)?;
            out.push(s.info.clone());
            at = s.parent;
        }
        out.reverse();
        Ok(out)
    }

    fn admit(
        &self,
        run: &str,
        path: &[u64],
        _requester_label: Option<&str>,
        request: &StoreRequest,
    ) -> Result<Admission, StoreError> {
        let now = self.clock.now();
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        r.expire_holds(now);
        let tracker = r.tracker(run, path)?.clone();
        let mut asked = RunRequest::new(request.phase, request.tokens);
        if let Some(d) = request.duration {
            asked = asked
                .with_duration(d)
                .map_err(|e| malformed(run, e.to_string()))?;
        }
        let outcome = match request.mode {
            AdmitMode::Reserve => tracker.reserve_request(&asked).map(Some),
            AdmitMode::Probe => tracker.would_fit(&asked).map(|_| None),
            _ => tracker.check_request(&asked).map(|_| None),
        };
        match outcome {
            Ok(hold) => {
                let reservation = hold.map(|hold| {
                    let id = r.next_hold;
                    r.next_hold += 1;
                    r.holds.insert(id, (hold, now + request.lease));
                    id
                });
                Ok(Admission::Passed {
                    state: r.state(run, path, now)?,
                    reservation,
                })
            }
            Err(e) => Ok(Admission::Refused {
                state: r.state(run, path, now)?,
                breach: record_of(&e, now),
            }),
        }
    }

    fn settle(
        &self,
        run: &str,
        path: &[u64],
        reservation: u64,
        actual: Option<TokenUsage>,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        let tracker = r.tracker(run, path)?.clone();
        if !r.settled.insert(reservation) {
            // Settled before: a retry after a lost reply counts nothing.
            return Ok(());
        }
        match (r.holds.remove(&reservation), actual) {
            (Some((hold, _)), Some(u)) => {
                hold.settle(u);
            }
            (Some((hold, _)), None) => hold.release(),
            // The lease ended and gave the tokens back; what was spent is
            // still recorded.
            (None, Some(u)) => {
                tracker.record(u);
            }
            (None, None) => {}
        }
        Ok(())
    }

    fn record(&self, run: &str, path: &[u64], usage: TokenUsage) -> Result<(), StoreError> {
        let inner = self.lock();
        let r = inner.runs.get(run).ok_or_else(|| unknown_run(run))?;
        r.tracker(run, path)?.record(usage);
        Ok(())
    }

    fn record_once(
        &self,
        run: &str,
        path: &[u64],
        request: &str,
        usage: TokenUsage,
    ) -> Result<bool, StoreError> {
        super::require_request_id(run, request)?;
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        let tracker = r.tracker(run, path)?.clone();
        if !r.recorded.insert(request.to_string()) {
            return Ok(false);
        }
        tracker.record(usage);
        Ok(true)
    }

    fn read(&self, run: &str, path: &[u64]) -> Result<PathState, StoreError> {
        let now = self.clock.now();
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        r.expire_holds(now);
        r.tracker(run, path)?;
        r.state(run, path, now)
    }

    fn finalize(
        &self,
        run: &str,
        path: &[u64],
        _requester_label: Option<&str>,
    ) -> Result<Admission, StoreError> {
        let now = self.clock.now();
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        r.expire_holds(now);
        let outcome = r.tracker(run, path)?.finalize();
        let state = r.state(run, path, now)?;
        Ok(match outcome {
            Ok(_) => Admission::Passed {
                state,
                reservation: None,
            },
            Err(e) => Admission::Refused {
                state,
                breach: record_of(&e, now),
            },
        })
    }

    fn update_history(
        &self,
        key: &str,
        update: &mut dyn FnMut(&mut UsageRecorder) -> Result<(), UsageError>,
    ) -> Result<UsageRecorder, HistoryError> {
        let mut inner = self.lock();
        let mut next = inner.history.get(key).cloned().unwrap_or_default();
        update(&mut next)?;
        inner.history.insert(key.to_string(), next.clone());
        Ok(next)
    }
}
