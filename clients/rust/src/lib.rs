//! The Rust client of **interrupt-sidecar**, for tools.
//!
//! A tool attaches to the execution (an agent turn or a task) it runs in and gets a
//! [`CancellationToken`](tokio_util::sync::CancellationToken) that is cancelled the moment
//! the agent interrupts the execution, with the reason beside it:
//!
//! ```no_run
//! use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};
//!
//! # async fn scan(_: &str) {}
//! async fn grep(paths: &[&str]) -> interrupt_sidecar_client::Result<String> {
//!     let run = attach(AttachOptions::new(InterruptBehavior::Cooperative).tool_name("grep")).await?;
//!     let token = run.token();
//!     for path in paths {
//!         if token.is_cancelled() {
//!             let reason = run.reason().expect("set before the token is cancelled");
//!             run.close().await; // reports unwound: INTERRUPTED
//!             return Ok(format!("grep interrupted: {reason}"));
//!         }
//!         scan(path).await;
//!     }
//!     run.unwound(ToolOutcome::Completed).await?;
//!     run.close().await;
//!     Ok("done".into())
//! }
//! ```
//!
//! The daemon's address and the attach token come from `INTERRUPT_SIDECAR_ADDRESS` and
//! `INTERRUPT_SIDECAR_TOKEN` unless given in [`AttachOptions`]. Without a token the run is
//! a no-op (the token never trips), so a tool runs unchanged outside an agent.
//!
//! Over a unix socket, an interruptible tool also asks for the daemon's *cancel doorbell*,
//! a raw unix socket that brings the cancel ahead of the gRPC stream; the same cancel still
//! follows on the stream and the run trips once, on whichever comes first.
//! `INTERRUPT_SIDECAR_DOORBELL=0` ([`DOORBELL_ENV`]) or [`AttachOptions::doorbell`] turn it off.

#![warn(missing_docs)]

mod config;
mod doorbell;
mod error;
mod process;
mod run;
mod stream;
mod types;

/// The real daemon the integration tests use (`tests/support`), for the unit tests too.
#[cfg(test)]
#[path = "../tests/support/mod.rs"]
mod test_daemon;

/// The generated messages and gRPC client stubs of `interrupt.v1` (from `protos/`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    include!("gen/interrupt.v1.rs");
}

pub use config::{default_address, resolve_address, ADDRESS_ENV, DOORBELL_ENV, TOKEN_ENV};
pub use error::{code_name, Details, Error, Result};
pub use process::ManagedChild;
pub use run::{attach, AttachOptions, ProcessGroupOptions, Run, Terminator, TerminatorKind};
pub use types::{Cancellation, InterruptBehavior, InterruptReason, ToolOutcome};

/// Re-exported so tools need no direct dependency to name the token type.
pub use tokio_util::sync::CancellationToken;
