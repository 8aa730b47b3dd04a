//! [`RedisStore`]: a run's books in Redis (or Valkey), one server-side script
//! per operation (`redis/budget.lua`).

use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::{Breach, BudgetDimension, BudgetPhase, Deadline, RunBudget, TokenLimit, TokenUsage};
use chrono::{DateTime, TimeDelta, Utc};
use redis::Value;

use super::{
    Admission, AdmitMode, BreachRecord, Expiry, HistoryError, PathState, RunStore, ScopeBooks,
    ScopeInfo, StoreError, StoreRequest,
};
use crate::{UsageError, UsageRecorder};

/// The largest count or limit the store accepts: the script compares in
/// Lua numbers (doubles), exact up to 2^53 − 1.
pub const REDIS_MAX_TOKENS: i64 = (1 << 53) - 1;

const SCRIPT: &str = include_str!("redis/budget.lua");

/// A [`RunStore`] in Redis or Valkey (feature `redis`).
///
/// * **Atomic.** Every operation is one Lua script run by the server, which
///   runs scripts one at a time: a check-and-reserve against every ancestor
///   scope's ceilings cannot interleave with another worker's.
/// * **One clock.** Deadlines and leases are judged by the server's `TIME`,
///   so workers whose clocks drift cannot stretch a deadline.
/// * **Leases.** A reservation not settled within its lease is given back
///   at the next operation on the run: a worker that dies mid-call does not
///   hold its tokens forever.
/// * **Exactly once.** A settle counts once per reservation, and a
///   [`record_once`](RunStore::record_once) once per request id: the
///   script remembers both (in `cupel:{<run>}:done`, for the run's
///   lifetime), so a retry after a lost reply counts nothing twice.
/// * **Expiry.** A run's four keys (`cupel:{<run>}:scopes`, `:leases`,
///   `:holds`, `:done`; one hash tag, so one cluster slot) expire [`Expiry::grace`]
///   after the root deadline, or [`Expiry::idle`] after the last write for
///   a run without one. Adaptive histories live under `cupel:history:<key>`
///   and do not expire.
/// * **Exactness.** Counts change only through `HINCRBY` (exact 64-bit
///   integers). Comparisons run in Lua numbers, exact up to 2^53 − 1
///   ([`REDIS_MAX_TOKENS`], about 9·10^15 tokens): a larger count or limit
///   is refused with [`StoreError::OutOfRange`] rather than compared
///   inexactly.
/// * **Failures** (connection refused, timeouts, server errors) are
///   [`StoreError::Unavailable`]; the connection is dropped and the next
///   call reconnects. Connect and I/O timeouts default to 2 seconds.
///
/// One `RedisStore` holds one connection behind a lock; share it in an
/// `Arc` across the threads of a process, and give each process its own.
pub struct RedisStore {
    client: redis::Client,
    conn: Mutex<Option<redis::Connection>>,
    script: redis::Script,
    expiry: Expiry,
    timeout: Duration,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field(
                "server",
                &self.client.get_connection_info().addr().to_string(),
            )
            .field("expiry", &self.expiry)
            .finish_non_exhaustive()
    }
}

fn unavailable(operation: &'static str) -> impl Fn(redis::RedisError) -> StoreError {
    move |e| StoreError::Unavailable {
        operation,
        message: e.to_string(),
    }
}

fn malformed(run: &str, message: impl Into<String>) -> StoreError {
    StoreError::Malformed {
        run: run.to_string(),
        message: message.into(),
    }
}

fn keys(run: &str) -> [String; 4] {
    [
        format!("cupel:{{{run}}}:scopes"),
        format!("cupel:{{{run}}}:leases"),
        format!("cupel:{{{run}}}:holds"),
        format!("cupel:{{{run}}}:done"),
    ]
}

fn path_arg(path: &[u64]) -> String {
    path.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

fn checked(operation: &'static str, values: &[i64]) -> Result<(), StoreError> {
    match values
        .iter()
        .find(|&&v| !(0..=REDIS_MAX_TOKENS).contains(&v))
    {
        Some(&value) => Err(StoreError::OutOfRange { operation, value }),
        None => Ok(()),
    }
}

fn opt_arg(v: Option<i64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// Text of a reply element.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Okay => Some("OK".to_string()),
        _ => None,
    }
}

fn int(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i128::from(*i)),
        _ => text(v)?.parse().ok(),
    }
}

fn ms_time(ms: i128) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(i64::try_from(ms).ok()?)
}

fn phase_of(s: &str) -> Option<BudgetPhase> {
    Some(match s {
        "preflight" => BudgetPhase::Preflight,
        "provider_request" => BudgetPhase::ProviderRequest,
        "tool_execution" => BudgetPhase::ToolExecution,
        "budget" => BudgetPhase::Budget,
        "response" => BudgetPhase::Response,
        _ => return None,
    })
}

fn breach_of(s: &str) -> Option<Breach> {
    Some(match s {
        "expired" => Breach::Expired,
        "too_long" => Breach::TooLong,
        "exhausted" => Breach::Exhausted,
        "does_not_fit" => Breach::DoesNotFit,
        "overshot" => Breach::Overshot,
        _ => return None,
    })
}

fn dimension_of(s: &str) -> Option<BudgetDimension> {
    Some(match s {
        "deadline" => BudgetDimension::Deadline,
        "input" => BudgetDimension::Input,
        "output" => BudgetDimension::Output,
        _ => return None,
    })
}

fn usage_of(i: &str, o: &str) -> Option<TokenUsage> {
    Some(TokenUsage::saturating_from_i128(
        i.parse().ok()?,
        o.parse().ok()?,
    ))
}

/// Reads a breach record written by the script.
fn parse_record(s: &str) -> Option<BreachRecord> {
    let f: Vec<&str> = s.splitn(15, '|').collect();
    if f.len() != 15 {
        return None;
    }
    let duration: i64 = f[11].parse().ok()?;
    Some(BreachRecord {
        phase: phase_of(f[0])?,
        dimension: dimension_of(f[1])?,
        breach: breach_of(f[2])?,
        scope_depth: f[3].parse().ok()?,
        requester_depth: f[4].parse().ok()?,
        usage: usage_of(f[5], f[6])?,
        reserved: usage_of(f[7], f[8])?,
        requested: usage_of(f[9], f[10])?,
        duration_ms: (duration >= 0).then_some(duration),
        now: ms_time(f[12].parse().ok()?)?,
        requester_label: (f[13] == "1").then(|| f[14].to_string()),
    })
}

/// Reads `now, (ui uo ri ro fi fo halted) per scope`.
fn parse_state(v: &Value) -> Option<PathState> {
    let Value::Array(items) = v else { return None };
    let (now, rest) = items.split_first()?;
    if rest.len() % 7 != 0 {
        return None;
    }
    let scopes = rest
        .chunks(7)
        .map(|c| {
            Some(ScopeBooks {
                used: [int(&c[0])?, int(&c[1])?],
                reserved: [int(&c[2])?, int(&c[3])?],
                refused: [int(&c[4])?, int(&c[5])?],
                halted: int(&c[6])? != 0,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(PathState {
        now: ms_time(int(now)?)?,
        scopes,
    })
}

impl RedisStore {
    /// A store on the server at `url` (`redis://host:port/db`,
    /// `rediss://` for TLS if the `redis` crate is built with it). Nothing
    /// is sent until the first operation.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when `url` is not a Redis URL.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(unavailable("open"))?;
        Ok(Self {
            client,
            conn: Mutex::new(None),
            script: redis::Script::new(SCRIPT),
            expiry: Expiry::default(),
            timeout: Duration::from_secs(2),
        })
    }

    /// The same store with other key lifetimes.
    #[must_use]
    pub fn with_expiry(mut self, expiry: Expiry) -> Self {
        self.expiry = expiry;
        self
    }

    /// The same store with another connect and I/O timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn connection(
        &self,
        operation: &'static str,
    ) -> Result<MutexGuard<'_, Option<redis::Connection>>, StoreError> {
        let mut guard = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            let conn = self
                .client
                .get_connection_with_timeout(self.timeout)
                .map_err(unavailable(operation))?;
            conn.set_read_timeout(Some(self.timeout))
                .map_err(unavailable(operation))?;
            conn.set_write_timeout(Some(self.timeout))
                .map_err(unavailable(operation))?;
            *guard = Some(conn);
        }
        Ok(guard)
    }

    /// Runs the script with `args` (after the operation name) on `run`'s keys.
    fn call(
        &self,
        operation: &'static str,
        run: &str,
        args: &[String],
    ) -> Result<Vec<Value>, StoreError> {
        let mut guard = self.connection(operation)?;
        let Some(conn) = guard.as_mut() else {
            return Err(StoreError::Unavailable {
                operation,
                message: "no connection".to_string(),
            });
        };
        let mut invocation = self.script.prepare_invoke();
        for k in keys(run) {
            invocation.key(k);
        }
        invocation.arg(operation);
        for a in args {
            invocation.arg(a);
        }
        match invocation.invoke::<Value>(conn) {
            Ok(Value::Array(items)) => Ok(items),
            Ok(other) => Err(malformed(run, format!("unexpected reply {other:?}"))),
            Err(e) => {
                // A broken connection is replaced on the next call.
                *guard = None;
                Err(unavailable(operation)(e))
            }
        }
    }

    /// The rest of the reply after the status word `ok`, or the error the
    /// status names.
    fn expect_ok<'a>(run: &str, reply: &'a [Value], ok: &str) -> Result<&'a [Value], StoreError> {
        if reply.first().and_then(text).as_deref() == Some(ok) {
            return Ok(&reply[1..]);
        }
        Err(Self::status_error(run, reply))
    }

    /// The error a status word names.
    fn status_error(run: &str, reply: &[Value]) -> StoreError {
        let status = reply.first().and_then(text).unwrap_or_default();
        match status.as_str() {
            "unknown_run" => StoreError::UnknownRun {
                run: run.to_string(),
            },
            "unknown_scope" => StoreError::UnknownScope {
                run: run.to_string(),
                scope: reply
                    .get(1)
                    .and_then(int)
                    .and_then(|v| u64::try_from(v).ok())
                    .unwrap_or(u64::MAX),
            },
            "exists" => StoreError::RunExists {
                run: run.to_string(),
            },
            "malformed" => malformed(run, reply.get(1).and_then(text).unwrap_or_default()),
            other => malformed(run, format!("unexpected status '{other}'")),
        }
    }

    fn idle_ms(&self) -> String {
        self.expiry.idle.num_milliseconds().max(1).to_string()
    }

    fn admission(run: &str, reply: &[Value]) -> Result<Admission, StoreError> {
        let status = reply.first().and_then(text).unwrap_or_default();
        match status.as_str() {
            "passed" => {
                let rid = reply.get(1).and_then(int).unwrap_or(-1);
                let state = reply
                    .get(2)
                    .and_then(parse_state)
                    .ok_or_else(|| malformed(run, "unreadable books"))?;
                Ok(Admission::Passed {
                    state,
                    reservation: u64::try_from(rid).ok(),
                })
            }
            "refused" => {
                let raw = reply.get(1).and_then(text).unwrap_or_default();
                let breach = parse_record(&raw)
                    .ok_or_else(|| malformed(run, format!("unreadable breach record '{raw}'")))?;
                let state = reply
                    .get(2)
                    .and_then(parse_state)
                    .ok_or_else(|| malformed(run, "unreadable books"))?;
                Ok(Admission::Refused { state, breach })
            }
            _ => Err(Self::status_error(run, reply)),
        }
    }

    /// `record`, once per `request` when it is not empty; whether it counted.
    fn record_with(
        &self,
        run: &str,
        path: &[u64],
        request: &str,
        usage: TokenUsage,
    ) -> Result<bool, StoreError> {
        checked("record", &[usage.input(), usage.output()])?;
        let reply = self.call(
            "record",
            run,
            &[
                path_arg(path),
                usage.input().to_string(),
                usage.output().to_string(),
                self.idle_ms(),
                request.to_string(),
            ],
        )?;
        let rest = Self::expect_ok(run, &reply, "ok")?;
        Ok(rest.first().and_then(text).as_deref() != Some("again"))
    }

    fn label_args(label: Option<&str>) -> [String; 2] {
        match label {
            Some(l) => ["1".to_string(), l.to_string()],
            None => ["0".to_string(), String::new()],
        }
    }
}

fn budget_args(budget: &RunBudget) -> Result<[String; 3], StoreError> {
    let limit = budget.token_limit();
    let li = limit.and_then(|l| l.input());
    let lo = limit.and_then(|l| l.output());
    checked("open", &[li.unwrap_or(0), lo.unwrap_or(0)])?;
    // Kept to the millisecond, rounded up: a deadline never passes early.
    let dl = budget.deadline().map(|d| {
        let at = d.expires_at();
        let ms = at.timestamp_millis();
        if at.timestamp_subsec_nanos() % 1_000_000 == 0 {
            ms
        } else {
            ms.saturating_add(1)
        }
    });
    Ok([opt_arg(dl), opt_arg(li), opt_arg(lo)])
}

impl RunStore for RedisStore {
    fn now(&self) -> Result<DateTime<Utc>, StoreError> {
        let mut guard = self.connection("time")?;
        let Some(conn) = guard.as_mut() else {
            return Err(StoreError::Unavailable {
                operation: "time",
                message: "no connection".to_string(),
            });
        };
        match redis::cmd("TIME").query::<(i64, i64)>(conn) {
            Ok((secs, micros)) => DateTime::from_timestamp_micros(
                secs.saturating_mul(1_000_000).saturating_add(micros),
            )
            .ok_or_else(|| StoreError::Unavailable {
                operation: "time",
                message: format!("server time {secs}.{micros:06} is out of range"),
            }),
            Err(e) => {
                *guard = None;
                Err(unavailable("time")(e))
            }
        }
    }

    fn create_run(&self, run: &str, budget: &RunBudget) -> Result<(), StoreError> {
        let [dl, li, lo] = budget_args(budget)?;
        let expire_at = budget
            .deadline()
            .map(|d| {
                (d.expires_at() + self.expiry.grace)
                    .timestamp_millis()
                    .to_string()
            })
            .unwrap_or_default();
        let reply = self.call("create_run", run, &[dl, li, lo, expire_at, self.idle_ms()])?;
        Self::expect_ok(run, &reply, "ok").map(|_| ())
    }

    fn create_child(
        &self,
        run: &str,
        parent: u64,
        budget: &RunBudget,
        label: Option<&str>,
    ) -> Result<u64, StoreError> {
        let [dl, li, lo] = budget_args(budget)?;
        let [has, label] = Self::label_args(label);
        let reply = self.call(
            "create_child",
            run,
            &[parent.to_string(), dl, li, lo, has, label, self.idle_ms()],
        )?;
        let rest = Self::expect_ok(run, &reply, "ok")?;
        rest.first()
            .and_then(int)
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| malformed(run, "no scope number"))
    }

    fn scope_path(&self, run: &str, scope: u64) -> Result<Vec<ScopeInfo>, StoreError> {
        let reply = self.call("scope_path", run, &[scope.to_string()])?;
        let rest = Self::expect_ok(run, &reply, "ok")?;
        if rest.len() % 6 != 0 || rest.is_empty() {
            return Err(malformed(run, "unreadable scope path"));
        }
        rest.chunks(6)
            .map(|c| {
                let field = |i: usize| text(&c[i]).unwrap_or_default();
                let num = |i: usize| -> Result<Option<i64>, StoreError> {
                    let t = field(i);
                    if t.is_empty() {
                        return Ok(None);
                    }
                    t.parse()
                        .map(Some)
                        .map_err(|_| malformed(run, format!("not a number: '{t}'")))
                };
                let id: u64 = field(0)
                    .parse()
                    .map_err(|_| malformed(run, "bad scope number"))?;
                let deadline = num(1)?
                    .map(|ms| {
                        DateTime::from_timestamp_millis(ms)
                            .map(Deadline::at)
                            .ok_or_else(|| malformed(run, "deadline out of range"))
                    })
                    .transpose()?;
                let (li, lo) = (num(2)?, num(3)?);
                let limit = if li.is_some() || lo.is_some() {
                    Some(TokenLimit::new(li, lo).map_err(|e| malformed(run, e.to_string()))?)
                } else {
                    None
                };
                Ok(ScopeInfo {
                    id,
                    // Built without the expiry check: the budget was valid
                    // when the scope was created.
                    budget: RunBudget::from_parts(deadline, limit),
                    label: (field(4) == "1").then(|| field(5)),
                })
            })
            .collect()
    }

    fn admit(
        &self,
        run: &str,
        path: &[u64],
        requester_label: Option<&str>,
        request: &StoreRequest,
    ) -> Result<Admission, StoreError> {
        let t = request.tokens;
        checked("admit", &[t.input(), t.output()])?;
        let mode = match request.mode {
            AdmitMode::Reserve => "reserve",
            AdmitMode::Probe => "probe",
            _ => "check",
        };
        let duration = request.duration.map_or(-1, |d| d.num_milliseconds().max(0));
        let lease = request
            .lease
            .max(TimeDelta::milliseconds(1))
            .num_milliseconds();
        let [has, label] = Self::label_args(requester_label);
        let reply = self.call(
            "admit",
            run,
            &[
                path_arg(path),
                request.phase.as_str().to_string(),
                t.input().to_string(),
                t.output().to_string(),
                duration.to_string(),
                mode.to_string(),
                lease.to_string(),
                has,
                label,
                self.idle_ms(),
            ],
        )?;
        Self::admission(run, &reply)
    }

    fn settle(
        &self,
        run: &str,
        path: &[u64],
        reservation: u64,
        actual: Option<TokenUsage>,
    ) -> Result<(), StoreError> {
        let (has, ai, ao) = match actual {
            Some(u) => {
                checked("settle", &[u.input(), u.output()])?;
                ("1", u.input(), u.output())
            }
            None => ("0", 0, 0),
        };
        let reply = self.call(
            "settle",
            run,
            &[
                path_arg(path),
                reservation.to_string(),
                has.to_string(),
                ai.to_string(),
                ao.to_string(),
                self.idle_ms(),
            ],
        )?;
        Self::expect_ok(run, &reply, "ok").map(|_| ())
    }

    fn record(&self, run: &str, path: &[u64], usage: TokenUsage) -> Result<(), StoreError> {
        self.record_with(run, path, "", usage).map(|_| ())
    }

    fn record_once(
        &self,
        run: &str,
        path: &[u64],
        request: &str,
        usage: TokenUsage,
    ) -> Result<bool, StoreError> {
        super::require_request_id(run, request)?;
        self.record_with(run, path, request, usage)
    }

    fn read(&self, run: &str, path: &[u64]) -> Result<PathState, StoreError> {
        let reply = self.call("read", run, &[path_arg(path)])?;
        let rest = Self::expect_ok(run, &reply, "ok")?;
        rest.first()
            .and_then(parse_state)
            .ok_or_else(|| malformed(run, "unreadable books"))
    }

    fn finalize(
        &self,
        run: &str,
        path: &[u64],
        requester_label: Option<&str>,
    ) -> Result<Admission, StoreError> {
        let [has, label] = Self::label_args(requester_label);
        let reply = self.call(
            "finalize",
            run,
            &[path_arg(path), has, label, self.idle_ms()],
        )?;
        Self::admission(run, &reply)
    }

    fn update_history(
        &self,
        key: &str,
        update: &mut dyn FnMut(&mut UsageRecorder) -> Result<(), UsageError>,
    ) -> Result<UsageRecorder, HistoryError> {
        let redis_key = format!("cupel:history:{key}");
        let mut guard = self.connection("history")?;
        let Some(conn) = guard.as_mut() else {
            return Err(StoreError::Unavailable {
                operation: "history",
                message: "no connection".to_string(),
            }
            .into());
        };
        // The recorder's own refusal, carried out of the transaction closure.
        let mut refused: Option<UsageError> = None;
        let result = redis::transaction(conn, &[&redis_key], |con, pipe| {
            let stored: Option<String> = redis::cmd("GET").arg(&redis_key).query(con)?;
            let mut recorder = match stored {
                Some(json) => serde_json::from_str::<UsageRecorder>(&json).map_err(|e| {
                    redis::RedisError::from((
                        redis::ErrorKind::Client,
                        "malformed adaptive history",
                        e.to_string(),
                    ))
                })?,
                None => UsageRecorder::new(),
            };
            if let Err(e) = update(&mut recorder) {
                refused = Some(e);
                // Nothing to write: leave the transaction unsent.
                return Ok(Some(recorder));
            }
            let json = serde_json::to_string(&recorder).map_err(|e| {
                redis::RedisError::from((
                    redis::ErrorKind::Client,
                    "unserialisable adaptive history",
                    e.to_string(),
                ))
            })?;
            pipe.cmd("SET").arg(&redis_key).arg(json).ignore();
            // `None` (the watched key changed) makes `transaction` retry.
            Ok(pipe.query::<Option<()>>(con)?.map(|()| recorder))
        });
        match (result, refused) {
            (_, Some(e)) => Err(HistoryError::Usage(e)),
            (Ok(recorder), None) => Ok(recorder),
            (Err(e), None) => {
                *guard = None;
                Err(unavailable("history")(e).into())
            }
        }
    }
}
