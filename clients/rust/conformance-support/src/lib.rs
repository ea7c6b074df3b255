//! The conversation every Rust conformance driver has with the runner
//! (`tests/conformance/PROTOCOL.md`): JSON steps on stdout, `go` on stdin, 10-second waits,
//! an `error` step and exit code 1 on any failure.

use std::future::Future;
use std::io::{BufRead, Write};
use std::time::Duration;

pub use serde_json::json;

/// The tool name every Rust driver attaches with.
pub const TOOL_NAME: &str = "conformance-rust";
/// How long any wait inside a driver may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// What a driver's script returns: any error ends it with an `error` step.
pub type Outcome = Result<(), Box<dyn std::error::Error>>;

/// Prints one step (a JSON object with a `"step"` key) on its own line, flushed at once.
pub fn step(value: serde_json::Value) {
    let mut stdout = std::io::stdout().lock();
    // A closed stdout means the runner is gone: nothing left to tell.
    let _ = writeln!(stdout, "{value}");
    let _ = stdout.flush();
}

/// Prints the `error` step and exits 1.
pub fn fail(message: impl std::fmt::Display) -> ! {
    step(json!({"step": "error", "message": message.to_string()}));
    std::process::exit(1);
}

/// Awaits `future` for at most [`WAIT`]; fails the driver with `what` when it takes longer.
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(WAIT, future).await {
        Ok(value) => value,
        Err(_) => fail(format!("timed out after {WAIT:?} waiting for {what}")),
    }
}

/// Waits (at most [`WAIT`]) for the runner's `go` line on stdin.
pub async fn wait_go() {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    // A plain thread: blocking stdin reads cannot be abandoned by a timeout otherwise.
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line);
        let _ = sender.send(read.map(|_| line));
    });
    match within("go on stdin", receiver).await {
        Ok(Ok(line)) if line.trim() == "go" => {}
        Ok(Ok(line)) => fail(format!("expected 'go' on stdin, got {line:?}")),
        Ok(Err(error)) => fail(format!("reading stdin: {error}")),
        Err(_) => fail("the stdin reader died"),
    }
}

/// Runs a driver's script on a current-thread runtime; an error becomes the `error` step.
pub fn run<F: Future<Output = Outcome>>(script: F) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|error| fail(format!("cannot start the tokio runtime: {error}")));
    if let Err(error) = runtime.block_on(script) {
        fail(error);
    }
}
