//! fifo_terminators: terminators run once each, in registration order.
use conformance::{json, step, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::ThreadInterrupt).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    let ids = ["first", "second", "third"];
    let (ran, mut order) = tokio::sync::mpsc::unbounded_channel();
    for id in ids {
        let ran = ran.clone();
        // Each acknowledged by the daemon before the next is registered.
        within(
            "a registration",
            run.register_terminator(id, move || {
                let _ = ran.send(id);
            }),
        )
        .await?;
    }
    step(json!({"step": "registered", "terminator_ids": ids}));
    let mut seen = Vec::new();
    while seen.len() < ids.len() {
        match within("the terminators to run", order.recv()).await {
            Some(id) => seen.push(id),
            None => return Err("the terminators' channel closed".into()),
        }
    }
    step(json!({"step": "terminators_ran", "order": seen}));
    run.unwound(ToolOutcome::Interrupted).await?;
    run.close().await;
    Ok(())
}
