//! A real daemon for the tests: the repository's `.venv/bin/interrupt-sidecar`, installed
//! by `make install-test`. Shared by `tests/daemon.rs` and the crate's own unit tests
//! (`src/lib.rs` includes this file): the client's names come from the including module,
//! whose root exports them either way.

// Each user calls only some of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::{AttachOptions, InterruptBehavior};

/// A daemon serving on a private unix socket, killed when dropped.
pub struct Daemon {
    pub cli: PathBuf,
    pub address: String,
    process: Child,
    dir: TempDir,
}

/// A directory of the test's own, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `$TMPDIR/isc-rust-<name>-<pid>`, created.
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("isc-rust-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl Daemon {
    /// Starts a daemon on a private unix socket, or `None` when the CLI is not installed.
    /// It has the default cancel doorbell, `<socket>.doorbell` ([`doorbell_path`](Self::doorbell_path)).
    pub fn start(name: &str) -> Option<Self> {
        let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/interrupt-sidecar");
        if !cli.is_file() {
            eprintln!("skipped: {} is not installed", cli.display());
            return None;
        }
        let dir = TempDir::new(name);
        let address = format!("unix://{}/s.sock", dir.0.display());
        let mut process = Command::new(&cli)
            .args(["serve", "--listen", &address, "--metrics-listen", ""])
            // The daemon's --doorbell (auto|off|PATH) reads this variable too, and refuses
            // the tool's opt-out value 0: what the test sets for its tools is not for it.
            .env_remove("INTERRUPT_SIDECAR_DOORBELL")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        BufReader::new(process.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert!(ready.starts_with("ready"), "the daemon said {ready:?}");
        Some(Self {
            cli,
            address,
            process,
            dir,
        })
    }

    /// The daemon's cancel doorbell socket.
    pub fn doorbell_path(&self) -> PathBuf {
        self.dir.0.join("s.sock.doorbell")
    }

    /// The CLI with `args` against this daemon, not yet run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.cli);
        command.args(args).args(["--address", &self.address]);
        command
    }

    /// Runs the CLI with `args`; its stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let output = self.command(args).output().unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    /// Begins an execution; returns (execution_id, attach_token).
    pub fn begin(&self) -> (String, String) {
        begun(&self.cli(&["begin", "--json"]))
    }

    pub fn interrupt(&self, execution_id: &str, reason: &str) {
        self.cli(&["interrupt", "--reason", reason, execution_id]);
    }

    /// Options to attach to this daemon with `token`.
    pub fn options(&self, behavior: InterruptBehavior, token: &str) -> AttachOptions {
        AttachOptions::new(behavior)
            .address(&self.address)
            .token(token)
            .tool_name("rust-client-test")
    }
}

/// (execution_id, attach_token) from the output of `begin --json`.
pub fn begun(out: &str) -> (String, String) {
    let field = |name: &str| {
        let start = out.find(&format!("\"{name}\": \"")).unwrap() + name.len() + 5;
        out[start..].split('"').next().unwrap().to_owned()
    };
    (field("execution_id"), field("attach_token"))
}
