//! refused_on_the_wire: the daemon itself refuses what the client refuses locally.
//!
//! It speaks the protocol with the generated stubs (`interrupt_sidecar_client::proto`),
//! because the client's `register_terminator` refuses these registrations itself without
//! asking the daemon.
use conformance::{fail, json, step, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::code_name;
use interrupt_sidecar_client::proto::tool_channel_service_client::ToolChannelServiceClient;
use interrupt_sidecar_client::proto::{
    register_terminator, sidecar_message, tool_message, CallbackTerminator, Hello,
    InterruptBehavior, RegisterTerminator, SidecarMessage, ToolMessage, ToolOutcome, Unwound,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::codec::Streaming;
use tonic::transport::{Channel, Endpoint, Uri};

fn main() {
    conformance::run(script());
}

/// A plaintext channel to `INTERRUPT_SIDECAR_ADDRESS` (`unix:///path` or `HOST:PORT`).
async fn connect() -> Result<Channel, Box<dyn std::error::Error>> {
    let address = std::env::var("INTERRUPT_SIDECAR_ADDRESS")?;
    if let Some(path) = address.strip_prefix("unix:") {
        let path = format!("/{}", path.trim_start_matches('/'));
        // The authority is a placeholder: the connector ignores the URI.
        let channel = Endpoint::from_static("http://localhost")
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                        tokio::net::UnixStream::connect(path).await?,
                    ))
                }
            }))
            .await?;
        return Ok(channel);
    }
    Ok(Endpoint::from_shared(format!("http://{address}"))?
        .connect()
        .await?)
}

/// One Attach stream: requests go through a channel whose sender is dropped to half-close.
struct Stream {
    requests: Option<mpsc::Sender<ToolMessage>>,
    answers: Streaming<SidecarMessage>,
}

impl Stream {
    async fn attach(
        channel: Channel,
        behavior: InterruptBehavior,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let (sender, receiver) = mpsc::channel(16);
        sender
            .send(ToolMessage {
                message: Some(tool_message::Message::Hello(Hello {
                    attach_token: std::env::var("INTERRUPT_SIDECAR_TOKEN")?,
                    tool_name: TOOL_NAME.into(),
                    behavior: behavior as i32,
                    pid: std::process::id() as i32,
                    ..Hello::default()
                })),
            })
            .await?;
        let answers = within(
            "the Attach stream",
            ToolChannelServiceClient::new(channel).attach(ReceiverStream::new(receiver)),
        )
        .await?
        .into_inner();
        let mut stream = Stream {
            requests: Some(sender),
            answers,
        };
        match stream.receive("attached").await {
            sidecar_message::Message::Attached(_) => {}
            other => fail(format!("expected attached, got {other:?}")),
        }
        let name = behavior
            .as_str_name()
            .trim_start_matches("INTERRUPT_BEHAVIOR_");
        step(json!({"step": "attached", "behavior": name}));
        Ok(stream)
    }

    async fn send(&self, message: tool_message::Message) {
        let requests = self.requests.as_ref().expect("not half-closed yet");
        if requests
            .send(ToolMessage {
                message: Some(message),
            })
            .await
            .is_err()
        {
            fail("the Attach stream stopped taking requests");
        }
    }

    async fn receive(&mut self, what: &str) -> sidecar_message::Message {
        match within(what, self.answers.message()).await {
            Ok(Some(SidecarMessage {
                message: Some(message),
            })) => message,
            Ok(Some(_)) => fail(format!("an empty message instead of {what}")),
            Ok(None) => fail(format!("the stream ended before {what}")),
            Err(status) => fail(format!("the stream failed before {what}: {status}")),
        }
    }

    async fn register(&self, terminator_id: &str) {
        self.send(tool_message::Message::RegisterTerminator(
            RegisterTerminator {
                terminator_id: terminator_id.into(),
                kind: Some(register_terminator::Kind::Callback(CallbackTerminator {})),
            },
        ))
        .await;
    }

    /// The answer to registering `terminator_id` must be the daemon's error.
    async fn expect_refusal(&mut self, terminator_id: &str) {
        let what = format!("the answer to registering {terminator_id}");
        match self.receive(&what).await {
            sidecar_message::Message::Error(error) => step(json!({
                "step": "refused",
                "terminator_id": error.terminator_id,
                "code": code_name(tonic::Code::from(error.code)),
                "message": error.message,
            })),
            sidecar_message::Message::TerminatorRegistered(_) => fail(format!(
                "the daemon accepted the registration of {terminator_id}"
            )),
            other => fail(format!(
                "expected an error for {terminator_id}, got {other:?}"
            )),
        }
    }

    /// Half-closes the stream and waits for the daemon to end it.
    async fn close(mut self) {
        self.requests = None;
        match within(
            "the end of the stream after the half-close",
            self.answers.message(),
        )
        .await
        {
            Ok(None) => {}
            Ok(Some(message)) => fail(format!(
                "unexpected message before the stream ended: {message:?}"
            )),
            Err(status) => fail(format!("the stream ended with an error: {status}")),
        }
    }
}

async fn script() -> Outcome {
    let channel = within("the connection", connect()).await?;

    let mut stream = Stream::attach(channel.clone(), InterruptBehavior::NonInterruptible).await?;
    stream.register("refused").await;
    stream.expect_refusal("refused").await;
    stream.close().await;

    let mut stream = Stream::attach(channel, InterruptBehavior::ExternallyTerminated).await?;
    stream.register("accepted").await;
    match stream.receive("the answer to registering accepted").await {
        sidecar_message::Message::TerminatorRegistered(registered) => {
            step(json!({"step": "registered", "terminator_id": registered.terminator_id}))
        }
        other => fail(format!(
            "the daemon did not accept the registration of accepted: {other:?}"
        )),
    }
    // No wait in between: unwound has no answer, and the daemon reads a stream in order.
    stream
        .send(tool_message::Message::Unwound(Unwound {
            outcome: ToolOutcome::Completed as i32,
            detail: String::new(),
        }))
        .await;
    stream.register("too_late").await;
    stream.expect_refusal("too_late").await;
    stream.close().await;
    Ok(())
}
