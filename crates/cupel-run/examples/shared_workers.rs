//! N worker processes sharing one run budget through Redis.
//!
//! ```sh
//! redis-server --port 6379 &        # or any Redis / Valkey you can reach
//! cargo run -p cupel-rs-run --features redis --example shared_workers -- redis://127.0.0.1:6379/ 4
//! ```
//!
//! The orchestrator opens a run (20,000 input and 4,000 output tokens, one
//! minute) and a child scope per worker (6,000 input tokens each), then
//! starts the workers as separate processes of this same program. Each worker
//! attaches to its scope by number and makes "provider calls" — reserve 300
//! input + 60 output, settle what the call "used" — until its own ceiling or
//! the run's refuses. The orchestrator prints each worker's report and the
//! store's totals: the run's usage is the sum of the workers', and never
//! above its ceilings.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::{Command, ExitCode};
use std::sync::Arc;

use chrono::TimeDelta;
use cupel_run::store::{RedisStore, RunStore, SharedTracker};
use cupel_run::{BudgetPhase, Deadline, RunBudget, RunError, RunTracker, TokenLimit, TokenUsage};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--worker") {
        worker(&args[1..])
    } else {
        orchestrate(&args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

type Failure = Box<dyn std::error::Error>;

fn store(url: &str) -> Result<Arc<dyn RunStore>, Failure> {
    let store = RedisStore::open(url)?;
    if let Err(e) = store.now() {
        return Err(format!(
            "no Redis answers at {url} ({e}); start one with `redis-server --port 6379` \
             or pass another URL"
        )
        .into());
    }
    Ok(Arc::new(store))
}

fn orchestrate(args: &[String]) -> Result<(), Failure> {
    let url = args
        .first()
        .cloned()
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".to_string());
    let workers: usize = match args.get(1) {
        Some(n) => n
            .parse()
            .map_err(|_| format!("WORKERS must be a number, got '{n}'"))?,
        None => 4,
    };
    let store = store(&url)?;
    let now = store.now()?;
    let run_name = format!("shared-workers-{}", now.timestamp_millis());
    let budget = RunBudget::from_parts(
        Some(Deadline::at(now + TimeDelta::minutes(1))),
        Some(TokenLimit::new(Some(20_000), Some(4_000))?),
    );
    let run = SharedTracker::create(store.clone(), &run_name, budget)?;
    println!("run {run_name}: 20,000 input / 4,000 output tokens, 1 minute, {workers} workers");

    let mut children = Vec::new();
    for i in 1..=workers {
        let label = format!("worker-{i}");
        let cap = RunBudget::from_parts(None, Some(TokenLimit::new(Some(6_000), None)?));
        let scope = run.child_named(&label, cap)?;
        let child = Command::new(std::env::current_exe()?)
            .args(["--worker", &url, &run_name, &scope.scope_id().to_string()])
            .output_async()?;
        children.push((label, scope, child));
    }
    for (label, scope, child) in children {
        let out = child.wait_with_output()?;
        print!("{}", String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            return Err(format!("{label} failed: {}", out.status).into());
        }
        println!("  store says {label} used {}", scope.usage()?);
    }
    let snap = run.snapshot()?;
    println!(
        "store totals: used {} (reserved {}), halted: {}",
        snap.usage, snap.reserved, snap.halted
    );
    Ok(())
}

/// `Command::spawn` with piped output, named for what the caller does next.
trait OutputAsync {
    fn output_async(&mut self) -> std::io::Result<std::process::Child>;
}

impl OutputAsync for Command {
    fn output_async(&mut self) -> std::io::Result<std::process::Child> {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
    }
}

fn worker(args: &[String]) -> Result<(), Failure> {
    let [url, run_name, scope] = args else {
        return Err("usage: --worker URL RUN SCOPE".into());
    };
    let scope: u64 = scope.parse()?;
    let tracker = SharedTracker::attach(store(url)?, run_name, scope)?;
    let label = tracker.label().unwrap_or("worker").to_string();
    let mut calls = 0;
    let stopped = loop {
        let hold = match tracker.reserve(BudgetPhase::ProviderRequest, TokenUsage::new(300, 60)?) {
            Ok(hold) => hold,
            Err(RunError::Exceeded(e)) => break e.to_string(),
            Err(e) => return Err(e.into()),
        };
        // The "provider" reports a little less than was reserved.
        let used = TokenUsage::new(280 + (calls % 20), 40 + (calls % 15))?;
        hold.settle(used)?;
        calls += 1;
    };
    println!("{label}: {calls} calls, then stopped: {stopped}");
    Ok(())
}
