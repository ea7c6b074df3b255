//! The process helper's lower half: start a child leading a process group of its own, and
//! hold it as a [`ManagedChild`] that gives the group's terminator back when it is done.
//! [`Run::spawn`](crate::Run::spawn) builds on this to hand the group to the daemon, which
//! kills it at the trip. The run builds on this module, never the other way round: what a
//! child needs of its run is the [`GroupRelease`] trait, which the run's state implements.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::Arc;

use tokio::process::{Child, Command};

use crate::error::{Details, Error, Result};

/// What a [`ManagedChild`] needs of the run that registered its group: to unregister the
/// group's terminator once the child is reaped, quietly (the group no longer matters then).
pub(crate) trait GroupRelease: fmt::Debug + Send + Sync {
    fn release<'a>(
        &'a self,
        terminator_id: &'a str,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

/// Starts `command` as the leader of a new process group (`process_group(0)`); returns the
/// child and its group, whose id is the child's pid.
pub(crate) fn start_group_leader(command: &mut Command) -> Result<(Child, i32)> {
    command.process_group(0);
    let child = command
        .spawn()
        .map_err(|error| Error::io(format!("start {:?}", command.as_std().get_program()), error))?;
    let Some(pid) = child.id() else {
        return Err(Error::io(
            "start a child",
            std::io::Error::other("the child has no pid"),
        ));
    };
    Ok((child, pid as i32))
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
    owner: Arc<dyn GroupRelease>,
    reaped: bool,
}

impl ManagedChild {
    /// A child whose group is registered as the terminator `terminator_id` with `owner`.
    pub(crate) fn new(
        child: Child,
        pgid: i32,
        terminator_id: String,
        owner: Arc<dyn GroupRelease>,
    ) -> Self {
        Self {
            child,
            pgid,
            terminator_id,
            owner,
            reaped: false,
        }
    }

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
            self.owner.release(&self.terminator_id).await;
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
            let owner = self.owner.clone();
            let terminator_id = std::mem::take(&mut self.terminator_id);
            handle.spawn(async move { owner.release(&terminator_id).await });
        }
    }
}

pub(crate) fn kill_group(pgid: i32, signal: i32) {
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
