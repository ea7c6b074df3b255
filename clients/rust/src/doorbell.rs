//! The tool's end of the cancel doorbell: a unix socket on which the daemon rings the
//! cancel ahead of the Attach stream.
//!
//! A tool that asked for it in hello gets a path and a one-time token in `attached`. It
//! connects, writes the token, and the daemon writes the cancel there the moment the
//! execution trips (at once, if it already has): a 4-byte big-endian length, then a
//! serialized `interrupt.v1.Cancel`. Nothing else is ever written. A raw socket write
//! reaches the tool well before the same cancel on the stream, which still follows and
//! stays authoritative: the doorbell only makes the cancel earlier. So anything going
//! wrong here (no socket, a hang-up before a whole frame, a malformed frame) is logged at
//! debug level and the stream's cancel is used.
//!
//! The connection lives in a task of its own, so the stream's handling never waits on it.
//! The task hangs up after the frame (there is nothing more to read), when the run trips
//! the other way (the doorbell could only ring the same cancel again), when the stream
//! ends, and when the run is closed or dropped.

use std::os::fd::{AsRawFd, RawFd};

use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::proto;
use crate::types::Cancellation;

/// The frame's length prefix.
const LENGTH: usize = 4;
/// A Cancel is a few dozen bytes (its detail is at most 1 KiB): a longer frame is garbage.
const MAX_FRAME: usize = 64 * 1024;

/// Where a doorbell connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Connecting and writing the token.
    Connecting,
    /// The token is written; waiting for the frame on this descriptor.
    Listening(RawFd),
    /// Hung up, or never connected; `rang` once a whole, valid cancel frame was read.
    Closed { rang: bool },
}

/// One run's doorbell connection (the task that holds it).
pub(crate) struct Doorbell {
    stop: CancellationToken,
    task: JoinHandle<()>,
    phase: watch::Receiver<Phase>,
}

impl Doorbell {
    /// Starts connecting to the granted doorbell in a task; never blocks, never fails.
    ///
    /// `on_cancel` runs at most once, in the task, with the rung cancel: it must not block.
    /// The connection is dropped when `stop` or `tripped` is cancelled (`stop` by the
    /// stream's end or by [`close`](Self::close); `tripped` by the run's trip, whichever
    /// way the cancel came).
    pub(crate) fn open(
        grant: proto::Doorbell,
        stop: CancellationToken,
        tripped: CancellationToken,
        on_cancel: impl FnOnce(Cancellation) + Send + 'static,
    ) -> Self {
        let (phase, watcher) = watch::channel(Phase::Connecting);
        let task = tokio::spawn(ring(grant, stop.clone(), tripped, phase, on_cancel));
        Self {
            stop,
            task,
            phase: watcher,
        }
    }

    /// Where the connection is (tests wait on it; the task publishes it regardless, since
    /// a watch costs nothing without readers).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn phase(&self) -> watch::Receiver<Phase> {
        self.phase.clone()
    }

    /// Asks the task to hang up, without waiting (for `Drop`).
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }

    /// Hangs up and waits until the task, and with it the socket, is gone.
    pub(crate) async fn close(self) {
        self.stop.cancel();
        if let Err(error) = self.task.await {
            tracing::debug!("the cancel doorbell's task failed: {error}");
        }
    }
}

async fn ring(
    grant: proto::Doorbell,
    stop: CancellationToken,
    tripped: CancellationToken,
    phase: watch::Sender<Phase>,
    on_cancel: impl FnOnce(Cancellation),
) {
    let outcome = tokio::select! {
        biased;
        () = stop.cancelled() => Err("the run ended first".to_owned()),
        () = tripped.cancelled() => Err("the cancel came first on the stream".to_owned()),
        outcome = listen(&grant, &phase) => outcome.map_err(|error| error.to_string()),
    };
    // A lost select drops listen's future, and the socket with it, before the phase says so.
    match outcome {
        Ok((socket, cancel)) => {
            // Hand the cancel on first: it is what the doorbell is for. The hang-up follows.
            on_cancel(Cancellation::from_proto(&cancel));
            drop(socket);
            phase.send_replace(Phase::Closed { rang: true });
        }
        Err(why) => {
            tracing::debug!(
                "no cancel from the doorbell at {:?} ({why}); the stream's cancel will do",
                grant.path
            );
            phase.send_replace(Phase::Closed { rang: false });
        }
    }
}

/// Connects, writes the token and reads one frame: the connection and its cancel.
async fn listen(
    grant: &proto::Doorbell,
    phase: &watch::Sender<Phase>,
) -> std::io::Result<(UnixStream, proto::Cancel)> {
    use std::io::{Error, ErrorKind};
    let mut socket = UnixStream::connect(&grant.path).await?;
    socket.write_all(grant.token.as_bytes()).await?;
    phase.send_replace(Phase::Listening(socket.as_raw_fd()));
    // The daemon writes the frame with one send, so one read usually brings all of it.
    let mut frame = Vec::with_capacity(256);
    loop {
        if frame.len() >= LENGTH {
            let length = u32::from_be_bytes(frame[..LENGTH].try_into().expect("4 bytes"));
            let length = usize::try_from(length).unwrap_or(usize::MAX);
            if length > MAX_FRAME {
                return Err(Error::new(
                    ErrorKind::InvalidData,
                    format!("a {length}-byte frame"),
                ));
            }
            if frame.len() >= LENGTH + length {
                let cancel = proto::Cancel::decode(&frame[LENGTH..LENGTH + length])
                    .map_err(|error| Error::new(ErrorKind::InvalidData, error))?;
                return Ok((socket, cancel));
            }
        }
        if socket.read_buf(&mut frame).await? == 0 {
            // The stream ended, the token was refused, or the daemon is stopping: the
            // stream says which, and carries the cancel if there is one.
            return Err(Error::new(
                ErrorKind::UnexpectedEof,
                "hung up before a whole frame",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::net::UnixListener;
    use tokio::sync::oneshot;

    use super::*;
    use crate::run::hooks::Offer;
    use crate::run::{attach, CancelPath, Run};
    use crate::test_daemon::{begun, Daemon, TempDir};
    use crate::{InterruptBehavior, InterruptReason, ToolOutcome, DOORBELL_ENV};

    /// The bound of every wait in these tests.
    const WAIT: Duration = Duration::from_secs(10);
    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    async fn within<F: Future>(what: &str, future: F) -> F::Output {
        tokio::time::timeout(WAIT, future)
            .await
            .unwrap_or_else(|_| panic!("{what}: not within {WAIT:?}"))
    }

    /// Waits until the connection's phase satisfies `done`; returns that phase.
    async fn phase_until(mut phase: watch::Receiver<Phase>, done: fn(&Phase) -> bool) -> Phase {
        *within("the doorbell's phase", phase.wait_for(done))
            .await
            .expect("the phase is kept after the task ends")
    }

    fn settled(phase: &Phase) -> bool {
        *phase != Phase::Connecting
    }

    fn closed(phase: &Phase) -> bool {
        matches!(phase, Phase::Closed { .. })
    }

    fn grant(path: &Path) -> proto::Doorbell {
        proto::Doorbell {
            path: path.to_str().unwrap().to_owned(),
            token: TOKEN.to_owned(),
        }
    }

    fn frame(cancel: &proto::Cancel) -> Vec<u8> {
        let body = cancel.encode_to_vec();
        let mut frame = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        frame.extend(body);
        frame
    }

    fn a_cancel() -> proto::Cancel {
        let at = |seconds| prost_types::Timestamp { seconds, nanos: 5 };
        proto::Cancel {
            reason: proto::InterruptReason::NowPriorityInput as i32,
            detail: "new input".into(),
            tripped_at: Some(at(1_700_000_000)),
            grace_deadline: Some(at(1_700_000_001)),
        }
    }

    /// A doorbell socket of the test's own that serves one connection: it reads the token,
    /// writes `bytes` (in two writes, to split the frame), then reads until the client hangs
    /// up, or hangs up itself when `hang_up`. Answers the token and what else it read.
    fn fake_bell(
        dir: &TempDir,
        bytes: Vec<u8>,
        hang_up: bool,
    ) -> (
        std::path::PathBuf,
        tokio::task::JoinHandle<(String, Vec<u8>)>,
    ) {
        let path = dir.0.join("bell.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let server = tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut token = [0; TOKEN.len()];
            conn.read_exact(&mut token).await.unwrap();
            let (head, tail) = bytes.split_at(bytes.len().min(3));
            conn.write_all(head).await.unwrap();
            conn.flush().await.unwrap();
            tokio::task::yield_now().await;
            conn.write_all(tail).await.unwrap();
            let mut rest = Vec::new();
            if !hang_up {
                conn.read_to_end(&mut rest).await.unwrap();
            }
            (String::from_utf8(token.to_vec()).unwrap(), rest)
        });
        (path, server)
    }

    // -- the connection, against a doorbell socket of the test's own ------------------------

    #[tokio::test]
    async fn a_rung_cancel_is_handed_on_and_the_doorbell_hung_up() {
        let dir = TempDir::new("bell-rings");
        let cancel = a_cancel();
        let (path, server) = fake_bell(&dir, frame(&cancel), false);
        let (rung, received) = oneshot::channel();
        let bell = Doorbell::open(
            grant(&path),
            CancellationToken::new(),
            CancellationToken::new(),
            move |cancellation| rung.send(cancellation).unwrap(),
        );
        let cancellation = within("the rung cancel", received).await.unwrap();
        assert_eq!(cancellation, Cancellation::from_proto(&cancel));
        // The server's read_to_end returns at the client's hang-up: nothing else was written.
        let (token, rest) = within("the hang-up", server).await.unwrap();
        assert_eq!(token, TOKEN);
        assert!(rest.is_empty(), "{rest:?}");
        assert_eq!(
            phase_until(bell.phase(), closed).await,
            Phase::Closed { rang: true }
        );
        bell.close().await;
    }

    #[tokio::test]
    async fn a_broken_doorbell_never_rings() {
        let mut oversized = u32::MAX.to_be_bytes().to_vec();
        oversized.extend(b"garbage");
        let cases: [(&str, Option<Vec<u8>>); 5] = [
            ("no socket", None),
            ("a hang-up without a frame", Some(Vec::new())),
            ("half a frame", Some(frame(&a_cancel())[..8].to_vec())),
            ("an oversized frame", Some(oversized)),
            (
                "a malformed cancel",
                Some(vec![0, 0, 0, 3, 0xff, 0xff, 0xff]),
            ),
        ];
        for (case, bytes) in cases {
            let dir = TempDir::new("bell-broken");
            let (path, server) = match bytes {
                // Hang up unless the client must detect the bad frame itself.
                Some(bytes) => {
                    let hang_up = bytes.len() < 8;
                    let (path, server) = fake_bell(&dir, bytes, hang_up || case == "half a frame");
                    (path, Some(server))
                }
                None => (dir.0.join("nobody.sock"), None),
            };
            let rang = Arc::new(AtomicBool::new(false));
            let ringer = rang.clone();
            let bell = Doorbell::open(
                grant(&path),
                CancellationToken::new(),
                CancellationToken::new(),
                move |_| ringer.store(true, Ordering::SeqCst),
            );
            assert_eq!(
                phase_until(bell.phase(), closed).await,
                Phase::Closed { rang: false },
                "{case}"
            );
            // on_cancel would have run before the phase said closed.
            assert!(!rang.load(Ordering::SeqCst), "{case}");
            if let Some(server) = server {
                within(case, server).await.unwrap();
            }
            bell.close().await;
        }
    }

    #[tokio::test]
    async fn a_trip_the_other_way_and_closing_hang_up() {
        for ending in ["tripped", "stop", "close"] {
            let dir = TempDir::new("bell-hang-up");
            let (path, server) = fake_bell(&dir, Vec::new(), false);
            let (stop, tripped) = (CancellationToken::new(), CancellationToken::new());
            let bell = Doorbell::open(grant(&path), stop.clone(), tripped.clone(), |_| {
                panic!("never rung")
            });
            let phase = bell.phase();
            assert!(matches!(
                phase_until(phase.clone(), settled).await,
                Phase::Listening(_)
            ));
            match ending {
                "tripped" => tripped.cancel(),
                "stop" => stop.cancel(), // the stream ended
                _ => bell.close().await,
            }
            // The server reads until the client's end is closed.
            let (token, _) = within(ending, server).await.unwrap();
            assert_eq!(token, TOKEN);
            assert_eq!(
                phase_until(phase, closed).await,
                Phase::Closed { rang: false }
            );
        }
    }

    // -- a run, against the real daemon ----------------------------------------------------

    async fn start(name: &'static str) -> Option<Daemon> {
        within(
            "the daemon's start",
            tokio::task::spawn_blocking(move || Daemon::start(name)),
        )
        .await
        .unwrap()
    }

    async fn cli(daemon: &Daemon, args: &[&str]) -> String {
        let mut command = tokio::process::Command::from(daemon.command(args));
        let output = within("the CLI", command.kill_on_drop(true).output())
            .await
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    async fn begin(daemon: &Daemon) -> (String, String) {
        begun(&cli(daemon, &["begin", "--json"]).await)
    }

    async fn interrupt(daemon: &Daemon, execution_id: &str) {
        let args = ["interrupt", "--reason", "NOW_PRIORITY_INPUT"];
        cli(
            daemon,
            &[&args[..], &["--detail", "new input", execution_id]].concat(),
        )
        .await;
    }

    async fn attach_to(options: crate::AttachOptions) -> Run {
        within("the attach", attach(options)).await.unwrap()
    }

    /// Waits until the run was offered a cancel that satisfies `done`; all the offers.
    async fn offers_until(run: &Run, done: impl Fn(&[Offer]) -> bool) -> Vec<Offer> {
        let mut watcher = run.inner().hooks.offers.subscribe();
        let offers = within("the offers", watcher.wait_for(|o| done(o)))
            .await
            .unwrap();
        offers.to_vec()
    }

    fn assert_the_interrupt(cancellation: &Cancellation) {
        assert_eq!(cancellation.reason, InterruptReason::NowPriorityInput);
        assert_eq!(cancellation.detail, "new input");
        assert!(cancellation.tripped_at.is_some(), "{cancellation:?}");
        assert!(cancellation.grace_deadline.is_some(), "{cancellation:?}");
    }

    #[tokio::test]
    async fn the_doorbell_brings_the_cancel_and_the_streams_copy_is_the_same() {
        let Some(daemon) = start("doorbell-rings").await else {
            return;
        };
        let (execution_id, token) = begin(&daemon).await;
        let run = attach_to(daemon.options(InterruptBehavior::Cooperative, &token)).await;
        // Only the doorbell can trip the run now: the stream's cancel is recorded, not taken.
        let hooks = &run.inner().hooks;
        hooks.hold_stream_cancels.store(true, Ordering::SeqCst);
        let bell = run
            .doorbell()
            .expect("a daemon on a unix socket grants the doorbell");
        let phase = bell.phase();
        assert!(matches!(
            phase_until(phase.clone(), settled).await,
            Phase::Listening(_)
        ));

        interrupt(&daemon, &execution_id).await;
        let cancellation = within("the doorbell's cancel", run.cancelled()).await;
        assert_the_interrupt(&cancellation);
        assert_eq!(run.inner().tripped().unwrap().path, CancelPath::Doorbell);
        assert_eq!(
            phase_until(phase, closed).await,
            Phase::Closed { rang: true }
        );

        // The stream still brings the same cancel (held back here; dropped as a duplicate
        // otherwise).
        let offers = offers_until(&run, |o| o.len() == 2).await;
        let offer = |path, taken| Offer {
            path,
            cancellation: cancellation.clone(),
            taken,
        };
        assert_eq!(
            offers,
            [
                offer(CancelPath::Doorbell, true),
                offer(CancelPath::Stream, false)
            ]
        );
        within("unwound", run.unwound(ToolOutcome::Interrupted))
            .await
            .unwrap();
        within("the close", run.close()).await;
    }

    #[tokio::test]
    async fn both_copies_of_the_cancel_trip_the_run_once() {
        let Some(daemon) = start("doorbell-once").await else {
            return;
        };
        let (execution_id, token) = begin(&daemon).await;
        let run = attach_to(daemon.options(InterruptBehavior::ThreadInterrupt, &token)).await;
        let bell = run
            .doorbell()
            .expect("a daemon on a unix socket grants the doorbell");
        let phase = bell.phase();
        assert!(matches!(
            phase_until(phase.clone(), settled).await,
            Phase::Listening(_)
        ));

        interrupt(&daemon, &execution_id).await;
        let cancellation = within("the cancel", run.cancelled()).await;
        assert_the_interrupt(&cancellation);
        // The stream's copy always comes; the doorbell's, unless the stream's came first.
        offers_until(&run, |o| o.iter().any(|o| o.path == CancelPath::Stream)).await;
        phase_until(phase, closed).await;
        let offers = run.inner().hooks.offers.borrow().clone();
        assert_eq!(offers.iter().filter(|o| o.taken).count(), 1, "{offers:?}");
        assert!(
            offers.iter().all(|o| o.cancellation == cancellation),
            "{offers:?}"
        );
        assert_eq!(run.cancellation(), Some(cancellation));
        // The stream carries on: a registration after the trip runs at once.
        let (ran, done) = oneshot::channel();
        within(
            "a registration",
            run.register_terminator("late", move || ran.send(()).unwrap()),
        )
        .await
        .unwrap();
        within("the terminator", done).await.unwrap();
        within("the close", run.close()).await;
    }

    #[tokio::test]
    async fn an_execution_tripped_before_the_attach_cancels_once() {
        let Some(daemon) = start("doorbell-tripped").await else {
            return;
        };
        let (execution_id, token) = begin(&daemon).await;
        interrupt(&daemon, &execution_id).await;
        let run = attach_to(daemon.options(InterruptBehavior::Cooperative, &token)).await;
        let cancellation = run.cancellation().expect("the run starts cancelled");
        assert_the_interrupt(&cancellation);
        // Had a doorbell been opened, it would ring the same cancel at once: let it.
        if let Some(bell) = run.doorbell() {
            phase_until(bell.phase(), closed).await;
        }
        let offers = run.inner().hooks.offers.borrow().clone();
        assert_eq!(offers.iter().filter(|o| o.taken).count(), 1, "{offers:?}");
        assert_eq!(offers[0].path, CancelPath::Stream);
        assert!(
            offers.iter().all(|o| o.cancellation == cancellation),
            "{offers:?}"
        );
        within("the close", run.close()).await;
    }

    #[tokio::test]
    async fn a_tool_that_opts_out_or_is_not_interruptible_asks_for_no_doorbell() {
        let Some(daemon) = start("doorbell-opt-out").await else {
            return;
        };
        let options = |behavior, token: &str| daemon.options(behavior, token);
        // The control: the same daemon grants one to whoever asks.
        let (_, token) = begin(&daemon).await;
        let asked = attach_to(options(InterruptBehavior::Cooperative, &token)).await;
        assert!(asked.doorbell().is_some());
        within("the close", asked.close()).await;

        let (_, token) = begin(&daemon).await;
        let run = attach_to(options(InterruptBehavior::NonInterruptible, &token)).await;
        assert!(run.doorbell().is_none());
        within("the close", run.close()).await;

        let (execution_id, token) = begin(&daemon).await;
        let opted_out = options(InterruptBehavior::Cooperative, &token).doorbell(false);
        let run = attach_to(opted_out).await;
        assert!(run.doorbell().is_none(), "hello asked for a doorbell");
        interrupt(&daemon, &execution_id).await;
        let cancellation = within("the stream's cancel", run.cancelled()).await;
        assert_the_interrupt(&cancellation);
        assert_eq!(run.inner().tripped().unwrap().path, CancelPath::Stream);
        within("the close", run.close()).await;
    }

    /// Set in the child process of `the_environment_opts_out`.
    const CHILD: &str = "ISC_RUST_DOORBELL_ENV_CHILD";

    #[tokio::test]
    async fn the_environment_opts_out() {
        const NAME: &str = "doorbell::tests::the_environment_opts_out";
        if std::env::var_os(CHILD).is_none() {
            // The other tests of this process read the variable: set it only in a process
            // of its own, this test binary running this one test.
            let mut child = tokio::process::Command::new(std::env::current_exe().unwrap());
            child
                .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
                .env(DOORBELL_ENV, "0")
                .env(CHILD, "1")
                .kill_on_drop(true);
            let output = within("the child test", child.output()).await.unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                output.status.success(),
                "the child failed:\n{stdout}\n{stderr}"
            );
            assert!(stdout.contains("1 passed"), "{stdout}");
            return;
        }
        assert_eq!(std::env::var(DOORBELL_ENV).as_deref(), Ok("0"));
        let Some(daemon) = start("doorbell-env").await else {
            return;
        };
        let (_, token) = begin(&daemon).await;
        let run = attach_to(daemon.options(InterruptBehavior::Cooperative, &token)).await;
        assert!(run.doorbell().is_none(), "hello asked for a doorbell");
        within("the close", run.close()).await;
        // The option beats the variable.
        let (_, token) = begin(&daemon).await;
        let options = daemon
            .options(InterruptBehavior::Cooperative, &token)
            .doorbell(true);
        let run = attach_to(options).await;
        assert!(run.doorbell().is_some());
        within("the close", run.close()).await;
    }

    /// What the descriptor is (`socket:[inode]`), `None` once closed.
    fn descriptor(fd: RawFd) -> Option<std::path::PathBuf> {
        std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()
    }

    #[tokio::test]
    async fn ending_the_run_hangs_up_the_doorbell() {
        let Some(daemon) = start("doorbell-end").await else {
            return;
        };
        for ending in ["close", "drop"] {
            let (_, token) = begin(&daemon).await;
            let run = attach_to(daemon.options(InterruptBehavior::Cooperative, &token)).await;
            let phase = run.doorbell().expect("granted").phase();
            let Phase::Listening(fd) = phase_until(phase.clone(), settled).await else {
                panic!("{ending}: the doorbell did not connect");
            };
            let socket = descriptor(fd).expect("open while listening");
            if ending == "close" {
                within("the close", run.close()).await;
            } else {
                drop(run);
            }
            assert_eq!(
                phase_until(phase, closed).await,
                Phase::Closed { rang: false },
                "{ending}"
            );
            // Closed, and not by chance: the number may be reused, never the socket.
            assert_ne!(descriptor(fd), Some(socket), "{ending}");
        }
    }

    #[tokio::test]
    async fn a_doorbell_out_of_reach_leaves_the_cancel_to_the_stream() {
        let Some(daemon) = start("doorbell-gone").await else {
            return;
        };
        // The daemon still grants the path; connecting to it fails.
        std::fs::remove_file(daemon.doorbell_path()).unwrap();
        let (execution_id, token) = begin(&daemon).await;
        let run = attach_to(daemon.options(InterruptBehavior::Cooperative, &token)).await;
        let phase = run.doorbell().expect("granted").phase();
        assert_eq!(
            phase_until(phase, closed).await,
            Phase::Closed { rang: false }
        );
        interrupt(&daemon, &execution_id).await;
        let cancellation = within("the stream's cancel", run.cancelled()).await;
        assert_the_interrupt(&cancellation);
        assert_eq!(run.inner().tripped().unwrap().path, CancelPath::Stream);
        within("unwound", run.unwound(ToolOutcome::Interrupted))
            .await
            .unwrap();
        within("the close", run.close()).await;
    }
}
