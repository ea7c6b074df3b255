//! The process helper: start a child in a process group of its own and hand the group to
//! the daemon, which kills it at the trip.

use std::process::ExitStatus;
use std::sync::Arc;

use tokio::process::{Child, Command};

use crate::error::{Details, Error, Result};
use crate::run::{Inner, ProcessGroupOptions, Run};

impl Run {
    /// Starts `command` in a new process group (`process_group(0)`: the child leads it) and
    /// registers the group as a process-group terminator with default options (SIGTERM at
    /// the trip, SIGKILL after the execution's grace). EXTERNALLY_TERMINATED tools only.
    ///
    /// ```no_run
    /// # async fn example(run: &interrupt_sidecar_client::Run) -> interrupt_sidecar_client::Result<()> {
    /// let mut child = run.spawn(tokio::process::Command::new("make").arg("test")).await?;
    /// let status = child.wait().await?; // the daemon kills the group if the execution trips
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::FailedPrecondition`] for another behaviour or after unwound (checked before
    /// anything starts), [`Error::Io`] when the child cannot start, and the errors of
    /// [`Run::register_process_group`] (the child's group is then killed and reaped).
    pub async fn spawn(&self, command: &mut Command) -> Result<ManagedChild> {
        self.spawn_with(command, ProcessGroupOptions::default())
            .await
    }

    /// [`spawn`](Self::spawn) with the signal and the delay before SIGKILL chosen.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn).
    pub async fn spawn_with(
        &self,
        command: &mut Command,
        options: ProcessGroupOptions,
    ) -> Result<ManagedChild> {
        let inner = self.inner();
        inner.may_register_process_groups()?;
        command.process_group(0);
        let mut child = command.spawn().map_err(|error| {
            Error::io(format!("start {:?}", command.as_std().get_program()), error)
        })?;
        let Some(pid) = child.id() else {
            return Err(Error::io(
                "start a child",
                std::io::Error::other("the child has no pid"),
            ));
        };
        let pgid = pid as i32;
        let terminator_id = format!("pgid-{pgid}");
        match inner
            .register_process_group(terminator_id.clone(), pgid, options)
            .await
        {
            Ok(_) => Ok(ManagedChild {
                child,
                pgid,
                terminator_id,
                inner,
                reaped: false,
            }),
            Err(error) => {
                kill_group(pgid, libc::SIGKILL);
                let _ = child.wait().await;
                Err(error)
            }
        }
    }
}

/// A child started by [`Run::spawn`]: the leader of a process group the daemon kills at the trip.
///
/// [`wait`](Self::wait) unregisters the group once the child has exited. Dropping it
/// while the child still runs SIGKILLs the whole group (and unregisters it in the background).
#[derive(Debug)]
pub struct ManagedChild {
    child: Child,
    pgid: i32,
    terminator_id: String,
    inner: Arc<Inner>,
    reaped: bool,
}

impl ManagedChild {
    /// The child's pid (`None` once reaped).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The process group, led by the child: equal to its pid.
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The id of the process-group terminator (`pgid-<pgid>`).
    pub fn terminator_id(&self) -> &str {
        &self.terminator_id
    }

    /// The underlying [`tokio::process::Child`] (stdin, stdout, ...).
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits for the child to exit, reaps it, then unregisters its group (errors of that,
    /// e.g. after the daemon went away, are ignored: the group no longer matters).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when waiting fails.
    pub async fn wait(&mut self) -> Result<ExitStatus> {
        let status = self
            .child
            .wait()
            .await
            .map_err(|error| Error::io(format!("wait for process {}", self.pgid), error))?;
        if !self.reaped {
            self.reaped = true;
            self.inner.unregister_quietly(&self.terminator_id).await;
        }
        Ok(status)
    }

    /// Sends `signal` to the whole group now (while the leader has not been reaped).
    pub fn signal_group(&self, signal: i32) {
        if !self.reaped {
            kill_group(self.pgid, signal);
        }
    }
}

impl Drop for ManagedChild {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        // Not reaped, so the pgid cannot have been reused: killing the group is safe.
        kill_group(self.pgid, libc::SIGKILL);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let inner = self.inner.clone();
            let terminator_id = std::mem::take(&mut self.terminator_id);
            handle.spawn(async move { inner.unregister_quietly(&terminator_id).await });
        }
    }
}

fn kill_group(pgid: i32, signal: i32) {
    // SAFETY: killpg has no memory-safety preconditions; a failure (ESRCH: already gone)
    // is harmless here.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Without a daemon (no-op mode) a group is checked the way the daemon would refuse it.
pub(crate) fn check_local_group(pgid: i32) -> Result<()> {
    // SAFETY: getpgrp has no preconditions.
    if pgid == unsafe { libc::getpgrp() } {
        return Err(Error::InvalidArgument(Details::new(format!(
            "process group {pgid} is this process's own group; refusing to register it"
        ))));
    }
    // SAFETY: as above; signal 0 only checks that the group exists.
    let exists = unsafe { libc::killpg(pgid, 0) } == 0;
    if !exists && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return Err(Error::NotFound(Details::new(format!(
            "process group {pgid} does not exist"
        ))));
    }
    Ok(())
}
