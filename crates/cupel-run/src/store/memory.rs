//! [`MemoryStore`]: a run's books in this process's memory.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, TimeDelta, Utc};
use cupel_core::{Breach, BudgetPhase, RunBudget, TimeProvider, TokenUsage};

use super::{
    Admission, AdmitMode, BreachRecord, BudgetStore, HistoryError, PathState, ScopeBooks,
    ScopeInfo, StoreError, StoreRequest,
};
use crate::rules::{self, Books};
use crate::{UsageError, UsageRecorder};

/// A [`BudgetStore`] in this process's memory, deciding at the clock it is
/// given: the reference store (the behaviour suite holds every other store
/// to its answers), and a shared run budget for tests and single-process
/// programs written against [`SharedTracker`](super::SharedTracker).
/// Runs never expire; leases do, at the store's clock.
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
    scopes: Vec<Scope>,
    /// Open reservations by number: path, amount, lease end.
    leases: BTreeMap<u64, Lease>,
    next_reservation: u64,
}

struct Scope {
    info: ScopeInfo,
    parent: Option<u64>,
    books: ScopeBooks,
    halted: Option<BreachRecord>,
}

struct Lease {
    path: Vec<u64>,
    amount: TokenUsage,
    until: DateTime<Utc>,
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

    /// Checks that `path` is a chain from the root and returns its indices.
    fn indices(&self, run: &str, path: &[u64]) -> Result<Vec<usize>, StoreError> {
        let mut out = Vec::with_capacity(path.len());
        for (depth, &id) in path.iter().enumerate() {
            let scope = self.scope(run, id)?;
            let parent_ok = match depth {
                0 => scope.parent.is_none(),
                _ => scope.parent == Some(path[depth - 1]),
            };
            if !parent_ok {
                return Err(StoreError::Malformed {
                    run: run.to_string(),
                    message: format!("scope {id} is not at depth {depth} of the given path"),
                });
            }
            out.push(usize::try_from(id).unwrap_or(usize::MAX));
        }
        if out.is_empty() {
            return Err(StoreError::Malformed {
                run: run.to_string(),
                message: "empty scope path".to_string(),
            });
        }
        Ok(out)
    }

    /// Gives back the reservations whose lease ended at or before `now`.
    fn expire_leases(&mut self, now: DateTime<Utc>) {
        let ended: Vec<u64> = self
            .leases
            .iter()
            .filter(|(_, l)| l.until <= now)
            .map(|(&id, _)| id)
            .collect();
        for id in ended {
            if let Some(lease) = self.leases.remove(&id) {
                self.unreserve(&lease);
            }
        }
    }

    fn unreserve(&mut self, lease: &Lease) {
        for &id in &lease.path {
            if let Some(s) = usize::try_from(id)
                .ok()
                .and_then(|i| self.scopes.get_mut(i))
            {
                s.books.reserved[0] -= i128::from(lease.amount.input());
                s.books.reserved[1] -= i128::from(lease.amount.output());
            }
        }
    }

    fn books(&self, idx: &[usize]) -> Vec<Books> {
        idx.iter()
            .map(|&i| Books {
                budget: self.scopes[i].info.budget,
                used: self.scopes[i].books.used,
                reserved: self.scopes[i].books.reserved,
            })
            .collect()
    }

    fn state(&self, idx: &[usize], now: DateTime<Utc>) -> PathState {
        PathState {
            now,
            scopes: idx.iter().map(|&i| self.scopes[i].books).collect(),
        }
    }

    fn latched(&self, idx: &[usize]) -> Option<BreachRecord> {
        idx.iter().find_map(|&i| self.scopes[i].halted.clone())
    }

    /// Latches `record` on the scope at `at` (unless it is halted already).
    fn latch(&mut self, scope: usize, record: &BreachRecord) {
        let s = &mut self.scopes[scope];
        if s.halted.is_none() {
            s.halted = Some(record.clone());
            s.books.halted = true;
        }
    }
}

impl BudgetStore for MemoryStore {
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
        inner.runs.insert(
            run.to_string(),
            Run {
                scopes: vec![Scope {
                    info: ScopeInfo {
                        id: 0,
                        budget: *budget,
                        label: None,
                    },
                    parent: None,
                    books: ScopeBooks::default(),
                    halted: None,
                }],
                leases: BTreeMap::new(),
                next_reservation: 1,
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
        r.scope(run, parent)?;
        let id = r.scopes.len() as u64;
        r.scopes.push(Scope {
            info: ScopeInfo {
                id,
                budget: *budget,
                label: label.map(str::to_string),
            },
            parent: Some(parent),
            books: ScopeBooks::default(),
            halted: None,
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
        requester_label: Option<&str>,
        request: &StoreRequest,
    ) -> Result<Admission, StoreError> {
        let now = self.clock.now();
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        let idx = r.indices(run, path)?;
        r.expire_leases(now);
        if let Some(breach) = r.latched(&idx) {
            return Ok(Admission::Refused {
                state: r.state(&idx, now),
                breach,
            });
        }
        let books = r.books(&idx);
        let found = rules::first_breach(&books, request.tokens, request.duration, now);
        if let Some((at, dimension, breach)) = found {
            let record = BreachRecord {
                phase: request.phase,
                dimension,
                breach,
                scope_depth: at,
                requester_depth: idx.len() - 1,
                requester_label: requester_label.map(str::to_string),
                usage: TokenUsage::saturating_from_i128(books[at].used[0], books[at].used[1]),
                reserved: TokenUsage::saturating_from_i128(
                    books[at].reserved[0],
                    books[at].reserved[1],
                ),
                requested: request.tokens,
                duration_ms: request.duration.map(|d| d.num_milliseconds()),
                now,
            };
            if request.mode != AdmitMode::Probe {
                r.latch(idx[at], &record);
                for &i in &idx {
                    let b = &mut r.scopes[i].books;
                    b.refused[0] += i128::from(request.tokens.input());
                    b.refused[1] += i128::from(request.tokens.output());
                }
            }
            return Ok(Admission::Refused {
                state: r.state(&idx, now),
                breach: record,
            });
        }
        let mut reservation = None;
        if request.mode == AdmitMode::Reserve {
            for &i in &idx {
                let b = &mut r.scopes[i].books;
                b.reserved[0] += i128::from(request.tokens.input());
                b.reserved[1] += i128::from(request.tokens.output());
            }
            let id = r.next_reservation;
            r.next_reservation += 1;
            r.leases.insert(
                id,
                Lease {
                    path: path.to_vec(),
                    amount: request.tokens,
                    until: now + request.lease.max(TimeDelta::zero()),
                },
            );
            reservation = Some(id);
        }
        Ok(Admission::Passed {
            state: r.state(&idx, now),
            reservation,
        })
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
        let idx = r.indices(run, path)?;
        if let Some(lease) = r.leases.remove(&reservation) {
            r.unreserve(&lease);
        }
        if let Some(u) = actual {
            for &i in &idx {
                let b = &mut r.scopes[i].books;
                b.used[0] += i128::from(u.input());
                b.used[1] += i128::from(u.output());
            }
        }
        Ok(())
    }

    fn record(&self, run: &str, path: &[u64], usage: TokenUsage) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        let idx = r.indices(run, path)?;
        for &i in &idx {
            let b = &mut r.scopes[i].books;
            b.used[0] += i128::from(usage.input());
            b.used[1] += i128::from(usage.output());
        }
        Ok(())
    }

    fn read(&self, run: &str, path: &[u64]) -> Result<PathState, StoreError> {
        let now = self.clock.now();
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        let idx = r.indices(run, path)?;
        r.expire_leases(now);
        Ok(r.state(&idx, now))
    }

    fn finalize(
        &self,
        run: &str,
        path: &[u64],
        requester_label: Option<&str>,
    ) -> Result<Admission, StoreError> {
        let now = self.clock.now();
        let mut inner = self.lock();
        let r = inner.runs.get_mut(run).ok_or_else(|| unknown_run(run))?;
        let idx = r.indices(run, path)?;
        r.expire_leases(now);
        if let Some(breach) = r.latched(&idx) {
            return Ok(Admission::Refused {
                state: r.state(&idx, now),
                breach,
            });
        }
        let books = r.books(&idx);
        if let Some((at, dimension)) = rules::final_breach(&books) {
            let record = BreachRecord {
                phase: BudgetPhase::Response,
                dimension,
                breach: Breach::Overshot,
                scope_depth: at,
                requester_depth: idx.len() - 1,
                requester_label: requester_label.map(str::to_string),
                usage: TokenUsage::saturating_from_i128(books[at].used[0], books[at].used[1]),
                reserved: TokenUsage::saturating_from_i128(
                    books[at].reserved[0],
                    books[at].reserved[1],
                ),
                requested: TokenUsage::ZERO,
                duration_ms: None,
                now,
            };
            r.latch(idx[at], &record);
            return Ok(Admission::Refused {
                state: r.state(&idx, now),
                breach: record,
            });
        }
        Ok(Admission::Passed {
            state: r.state(&idx, now),
            reservation: None,
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
