//! [`CommandSummarizer`]: the summariser input piped to an external
//! command, its stdout the summary.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::{SummarizeError, Summarizer, SummaryInput};

/// The default time a summariser command has: 60 seconds.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// The default cap on a summariser command's output: 10 MB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 10 * 1024 * 1024;

/// The stderr kept for an error message.
const STDERR_BYTES: usize = 1_000;

/// Runs a shell command (`sh -c COMMAND`; `cmd /C` on Windows) per fold:
/// the [`SummaryInput::to_json`] document on its stdin, the summary on its
/// stdout (UTF-8; surrounding whitespace trimmed).
///
/// Failures are [`SummarizeError`]s, and the window keeps its previous
/// summary: a non-zero exit ([`SummarizeError::Exit`], with the start of
/// stderr), no answer within the timeout ([`SummarizeError::TimedOut`], the
/// command killed), more output than the cap ([`SummarizeError::TooLarge`],
/// killed), output that is not UTF-8 ([`SummarizeError::InvalidUtf8`]).
///
/// ```no_run
/// use std::time::Duration;
/// use cupel_chat::{CommandSummarizer, Compaction, Trim};
/// let s = CommandSummarizer::new("llm -m gpt-4o-mini 'Summarise this chat'")
///     .timeout(Duration::from_secs(30));
/// let opts = Trim::openai(8_000).summarize(Compaction::new(s));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSummarizer {
    command: String,
    timeout: Duration,
    max_output: usize,
}

impl CommandSummarizer {
    /// `command`, run by the shell, with [`DEFAULT_COMMAND_TIMEOUT`] and
    /// [`DEFAULT_MAX_OUTPUT_BYTES`].
    pub fn new(command: impl Into<String>) -> Self {
        CommandSummarizer {
            command: command.into(),
            timeout: DEFAULT_COMMAND_TIMEOUT,
            max_output: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }

    /// The time the command has (at least 1 ms).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The most bytes of output taken (at least 1).
    pub fn max_output(mut self, bytes: usize) -> Self {
        self.max_output = bytes.max(1);
        self
    }

    fn spawn(&self) -> Result<Child, SummarizeError> {
        let mut cmd = if cfg!(windows) {
            let mut c = Command::new("cmd");
            c.arg("/C").arg(&self.command);
            c
        } else {
            let mut c = Command::new("sh");
            c.arg("-c").arg(&self.command);
            c
        };
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| SummarizeError::Spawn {
                command: self.command.clone(),
                message: e.to_string(),
            })
    }

    /// Waits for `child` until the deadline; `Ok(None)` when the output
    /// reader reported the cap exceeded.
    fn wait(
        &self,
        child: &mut Child,
        over: &AtomicBool,
    ) -> Result<std::process::ExitStatus, SummarizeError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if over.load(Ordering::Relaxed) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SummarizeError::TooLarge {
                    command: self.command.clone(),
                    limit: self.max_output,
                });
            }
            match child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(SummarizeError::TimedOut {
                        command: self.command.clone(),
                        timeout: self.timeout,
                    });
                }
                Ok(None) => thread::sleep(Duration::from_millis(5)),
                Err(e) => {
                    return Err(SummarizeError::Failed(format!(
                        "cannot wait for `{}`: {e}",
                        self.command
                    )));
                }
            }
        }
    }
}

/// Reads at most `limit` bytes of `r`, then drains it; sets `over` when
/// there was more.
fn read_capped(mut r: impl Read, limit: usize, over: &AtomicBool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = limit.saturating_sub(out.len());
                out.extend_from_slice(&buf[..n.min(room)]);
                if n > room {
                    over.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
    out
}

impl Summarizer for CommandSummarizer {
    fn summarize(&self, input: &SummaryInput<'_>) -> Result<String, SummarizeError> {
        let doc = input.to_json().to_string();
        let mut child = self.spawn()?;
        let over = Arc::new(AtomicBool::new(false));
        // Detached threads: after a kill, a process the command started may
        // still hold the pipes; nothing here waits for it.
        if let Some(mut w) = child.stdin.take() {
            // A command that never reads stdin gets a closed pipe: ignored.
            thread::spawn(move || {
                let _ = w.write_all(doc.as_bytes());
            });
        }
        let out = child.stdout.take().map(|r| {
            let (over, limit) = (Arc::clone(&over), self.max_output);
            thread::spawn(move || read_capped(r, limit, &over))
        });
        let err = child.stderr.take().map(|r| {
            let never = Arc::new(AtomicBool::new(false));
            thread::spawn(move || read_capped(r, STDERR_BYTES, &never))
        });
        let status = self.wait(&mut child, &over)?;
        let bytes = out.and_then(|h| h.join().ok()).unwrap_or_default();
        if over.load(Ordering::Relaxed) {
            return Err(SummarizeError::TooLarge {
                command: self.command.clone(),
                limit: self.max_output,
            });
        }
        if !status.success() {
            let stderr = err
                .and_then(|h| h.join().ok())
                .map(|b| String::from_utf8_lossy(&b).trim().to_string())
                .unwrap_or_default();
            return Err(SummarizeError::Exit {
                command: self.command.clone(),
                status: status.to_string(),
                stderr,
            });
        }
        String::from_utf8(bytes)
            .map(|s| s.trim().to_string())
            .map_err(|e| SummarizeError::InvalidUtf8 {
                command: self.command.clone(),
                at: e.utf8_error().valid_up_to(),
            })
    }

    fn describe(&self) -> String {
        format!("command `{}`", self.command)
    }
}
