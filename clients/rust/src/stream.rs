//! One `ToolChannelService.Attach` stream: the handshake, a reader task, ordered writes.
//!
//! The reader task is the only consumer of the inbound stream. It never runs tool code
//! that could block it: a cancel trips the run's token, `run_terminator` goes to the
//! terminator runner, and acknowledgements settle the requests waiting for them. Writes
//! go through one channel that is the request body, so they reach the daemon in order.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic::Streaming;

use crate::error::{Details, Error, Result};
use crate::proto;
use crate::proto::sidecar_message::Message as Inbound;
use crate::proto::tool_channel_service_client::ToolChannelServiceClient;
use crate::proto::tool_message::Message as Outbound;
use crate::types::Cancellation;

/// How many tool messages may wait to be written before a writer waits.
const OUTBOX: usize = 64;

/// What an acknowledgement answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Registered,
    Unregistered,
}

struct Pending {
    id: u64,
    answer: Answer,
    reply: oneshot::Sender<Result<()>>,
}

#[derive(Default)]
struct State {
    /// Requests waiting for the daemon's answer, per terminator id, oldest first.
    pending: HashMap<String, VecDeque<Pending>>,
    next_pending: u64,
    /// Why the stream ended, for requests made afterwards.
    end_error: Option<Error>,
    /// Set once the tool has reported unwound: the stream ending is then expected.
    finishing: bool,
}

/// What the reader hands to the run.
pub(crate) trait Sink: Send + Sync + 'static {
    /// The execution tripped (called at most once per cancel message; must not block).
    fn cancel(&self, cancellation: Cancellation);
    /// The daemon asks the tool to run one of its callback terminators (must not block).
    fn run_terminator(&self, terminator_id: String);
}

/// The answer to hello, and the cancel that follows it when the execution already tripped.
pub(crate) struct Handshake {
    pub(crate) attached: proto::Attached,
    pub(crate) cancel: Option<Cancellation>,
    early: Vec<Inbound>,
    inbound: Streaming<proto::SidecarMessage>,
}

/// The client end of one tool's Attach stream.
pub(crate) struct ToolStream {
    address: String,
    request_timeout: Option<Duration>,
    outbox: Mutex<Option<mpsc::Sender<proto::ToolMessage>>>,
    state: Mutex<State>,
    ended: CancellationToken,
    /// For the tests: while true, the reader stops before each `run_terminator` (as if it
    /// had not arrived yet) until this turns false.
    #[cfg(test)]
    pub(crate) hold_runs: tokio::sync::watch::Sender<bool>,
}

impl ToolStream {
    /// Sends hello and reads `attached` (and the cancel right after it for an
    /// interruptible tool that attaches after the trip).
    pub(crate) async fn open(
        channel: Channel,
        address: &str,
        hello: proto::Hello,
        timeout: Option<Duration>,
        expect_cancel: bool,
    ) -> Result<(Arc<Self>, Handshake)> {
        let what = format!("attach to the sidecar at {address}");
        let (outbox, requests) = mpsc::channel(OUTBOX);
        // Queued before the call starts: the daemon answers headers only once it has read it.
        outbox
            .send(message(Outbound::Hello(hello)))
            .await
            .expect("the receiver is alive");
        let stream = Arc::new(Self {
            address: address.to_owned(),
            request_timeout: timeout,
            outbox: Mutex::new(Some(outbox)),
            state: Mutex::new(State::default()),
            ended: CancellationToken::new(),
            #[cfg(test)]
            hold_runs: tokio::sync::watch::Sender::new(false),
        });
        let handshake = async {
            let mut client = ToolChannelServiceClient::new(channel);
            let response = client
                .attach(ReceiverStream::new(requests))
                .await
                .map_err(|status| stream_error(&status, &what))?;
            let mut inbound = response.into_inner();
            let attached = match read(&mut inbound, &what).await? {
                Inbound::Attached(attached) => attached,
                Inbound::Error(refusal) => {
                    return Err(Error::from_code_number(
                        refusal.code,
                        Details::new(format!("attach refused: {}", refusal.message)),
                    ))
                }
                other => {
                    return Err(Error::Other {
                        code: tonic::Code::Internal,
                        details: Details::new(format!(
                            "{what}: expected 'attached', got {other:?}"
                        )),
                    })
                }
            };
            let mut cancel = None;
            let mut early = Vec::new();
            if attached.cancelled && expect_cancel {
                // Reading it here means the run starts with the full cancellation.
                match read(&mut inbound, &what).await? {
                    Inbound::Cancel(message) => cancel = Some(Cancellation::from_proto(&message)),
                    other => early.push(other),
                }
            }
            Ok(Handshake {
                attached,
                cancel,
                early,
                inbound,
            })
        };
        let handshake = match timeout {
            Some(limit) => tokio::time::timeout(limit, handshake).await.map_err(|_| {
                Error::DeadlineExceeded(Details::new(format!(
                    "{what}: no answer to hello within {limit:?}"
                )))
            })?,
            None => handshake.await,
        }?;
        Ok((stream, handshake))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    // -- reading --------------------------------------------------------------------

    /// Reads the stream until it ends, dispatching each message. Run as a task.
    pub(crate) async fn read_loop(self: Arc<Self>, handshake: Handshake, sink: Arc<dyn Sink>) {
        let Handshake {
            early, mut inbound, ..
        } = handshake;
        for message in early {
            self.dispatch(message, sink.as_ref());
        }
        let error = loop {
            match inbound.message().await {
                Ok(Some(proto::SidecarMessage {
                    message: Some(message),
                })) => {
                    #[cfg(test)]
                    self.held_back(&message).await;
                    self.dispatch(message, sink.as_ref());
                }
                Ok(Some(_)) => {} // a message newer than this client
                Ok(None) => {
                    break Error::ConnectionLost(Details::new(
                        "the tool's stream to the sidecar has ended",
                    ))
                }
                Err(status) => {
                    let what =
                        format!("the tool's stream to the sidecar at {} ended", self.address);
                    break stream_error(&status, &what);
                }
            }
        };
        let finishing = {
            let mut state = self.state();
            state.end_error = Some(error.clone());
            for (_, waiting) in state.pending.drain() {
                for pending in waiting {
                    let _ = pending.reply.send(Err(error.clone()));
                }
            }
            state.finishing
        };
        if !finishing {
            tracing::warn!(
                "the tool stream to the sidecar at {} ended: {error}",
                self.address
            );
        }
        self.ended.cancel();
    }

    /// Waits while the tests hold `run_terminator` messages back ([`Self::hold_runs`]).
    #[cfg(test)]
    async fn held_back(&self, message: &Inbound) {
        if matches!(message, Inbound::RunTerminator(_)) {
            let mut held = self.hold_runs.subscribe();
            // The sender lives as long as the stream: this only ends when released.
            let _released = held.wait_for(|held| !held).await.is_ok();
        }
    }

    fn dispatch(&self, message: Inbound, sink: &dyn Sink) {
        match message {
            Inbound::Cancel(cancel) => sink.cancel(Cancellation::from_proto(&cancel)),
            Inbound::RunTerminator(run) => sink.run_terminator(run.terminator_id),
            Inbound::TerminatorRegistered(ack) => {
                self.settle(&ack.terminator_id, Some(Answer::Registered), Ok(()));
            }
            Inbound::TerminatorUnregistered(ack) => {
                self.settle(&ack.terminator_id, Some(Answer::Unregistered), Ok(()));
            }
            Inbound::Error(refusal) => {
                let error = Error::from_code_number(
                    refusal.code,
                    Details::for_terminator(refusal.message, &refusal.terminator_id),
                );
                if refusal.terminator_id.is_empty()
                    || !self.settle(&refusal.terminator_id, None, Err(error.clone()))
                {
                    tracing::warn!("the sidecar refused a request of this tool: {error}");
                }
            }
            Inbound::Attached(_) => tracing::debug!("ignoring a second 'attached'"),
        }
    }

    /// Settles the oldest request for the terminator (of kind `answer`; any for errors).
    fn settle(&self, terminator_id: &str, answer: Option<Answer>, result: Result<()>) -> bool {
        let mut state = self.state();
        let Some(waiting) = state.pending.get_mut(terminator_id) else {
            return false;
        };
        let Some(index) = waiting
            .iter()
            .position(|p| answer.is_none_or(|a| p.answer == a))
        else {
            return false;
        };
        let pending = waiting.remove(index).expect("the index is in range");
        if waiting.is_empty() {
            state.pending.remove(terminator_id);
        }
        let _ = pending.reply.send(result);
        true
    }

    // -- writing --------------------------------------------------------------------

    fn end_error(&self) -> Option<Error> {
        self.state().end_error.clone()
    }

    /// Writes one message (in order with every other write).
    pub(crate) async fn write(&self, message: Outbound) -> Result<()> {
        if let Some(error) = self.end_error() {
            return Err(error);
        }
        let outbox = self
            .outbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(outbox) = outbox else {
            return Err(Error::FailedPrecondition(Details::new(
                "the tool's stream to the sidecar is closed for writing",
            )));
        };
        if outbox.send(self::message(message)).await.is_ok() {
            return Ok(());
        }
        // The call is over: the reader says why a moment later.
        let _ = tokio::time::timeout(Duration::from_secs(1), self.ended.cancelled()).await;
        Err(self.end_error().unwrap_or_else(|| {
            Error::ConnectionLost(Details::new("the tool's stream to the sidecar has ended"))
        }))
    }

    /// Writes a request and waits for the daemon's answer about `terminator_id`.
    pub(crate) async fn request(
        &self,
        message: Outbound,
        terminator_id: &str,
        answer: Answer,
    ) -> Result<()> {
        let (reply, answered) = oneshot::channel();
        let id = {
            let mut state = self.state();
            if let Some(error) = &state.end_error {
                return Err(error.clone());
            }
            state.next_pending += 1;
            let id = state.next_pending;
            state
                .pending
                .entry(terminator_id.to_owned())
                .or_default()
                .push_back(Pending { id, answer, reply });
            id
        };
        let outcome = async {
            self.write(message).await?;
            let answered = async {
                answered.await.unwrap_or_else(|_| {
                    Err(self.end_error().unwrap_or_else(|| {
                        Error::ConnectionLost(Details::new("the tool's stream to the sidecar was closed"))
                    }))
                })
            };
            match self.request_timeout {
                Some(limit) => tokio::time::timeout(limit, answered).await.unwrap_or_else(|_| {
                    Err(Error::DeadlineExceeded(Details::for_terminator(
                        format!("the sidecar did not answer for terminator {terminator_id:?} within {limit:?}"),
                        terminator_id,
                    )))
                }),
                None => answered.await,
            }
        }
        .await;
        // Drop the request if it is still waiting (a failed write, a timeout).
        let mut state = self.state();
        if let Some(waiting) = state.pending.get_mut(terminator_id) {
            waiting.retain(|p| p.id != id);
            if waiting.is_empty() {
                state.pending.remove(terminator_id);
            }
        }
        outcome
    }

    // -- the end --------------------------------------------------------------------

    /// From now on the stream ending is expected (no warning).
    pub(crate) fn set_finishing(&self) {
        self.state().finishing = true;
    }

    /// Half-closes the stream and gives the daemon `limit` to end it.
    pub(crate) async fn finish(&self, limit: Duration) {
        self.close_writes();
        if tokio::time::timeout(limit, self.ended.cancelled())
            .await
            .is_err()
        {
            tracing::debug!("the sidecar did not end the tool stream within {limit:?} of unwound");
        }
    }

    /// Ends the request side (no more writes): the daemon then ends the stream.
    pub(crate) fn close_writes(&self) {
        self.set_finishing();
        self.outbox.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// True once the daemon has ended the stream (or it broke).
    pub(crate) fn ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Cancelled once the daemon has ended the stream (or it broke).
    pub(crate) fn ended_token(&self) -> CancellationToken {
        self.ended.clone()
    }
}

fn message(message: Outbound) -> proto::ToolMessage {
    proto::ToolMessage {
        message: Some(message),
    }
}

async fn read(inbound: &mut Streaming<proto::SidecarMessage>, what: &str) -> Result<Inbound> {
    loop {
        match inbound.message().await {
            Ok(Some(proto::SidecarMessage {
                message: Some(message),
            })) => return Ok(message),
            Ok(Some(_)) => continue,
            Ok(None) => {
                return Err(Error::ConnectionLost(Details::new(format!(
                    "{what}: the daemon closed the stream"
                ))))
            }
            Err(status) => return Err(stream_error(&status, what)),
        }
    }
}

/// A status that ends the stream: the daemon's own (a refusal), or a broken connection.
fn stream_error(status: &tonic::Status, what: &str) -> Error {
    // A transport failure (the daemon died, the socket closed) carries its cause; a status
    // the daemon sent does not.
    if std::error::Error::source(status).is_some()
        && matches!(
            status.code(),
            tonic::Code::Unknown
                | tonic::Code::Internal
                | tonic::Code::Unavailable
                | tonic::Code::Cancelled
        )
    {
        return Error::ConnectionLost(Details::new(format!(
            "{what}: the connection to the daemon broke ({}); if the daemon restarted, attach again",
            status.message()
        )));
    }
    Error::from_status(status, what)
}
