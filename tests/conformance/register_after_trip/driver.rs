//! register_after_trip: a terminator registered after the trip runs at once.
use conformance::{json, step, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::ThreadInterrupt).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    step(json!({"step": "attached", "cancelled": run.is_cancelled()}));
    let cancellation = within("the cancel", run.cancelled()).await;
    step(json!({"step": "cancelled", "reason": cancellation.reason.as_str()}));
    let (ran, ran_rx) = tokio::sync::oneshot::channel();
    let terminator = within(
        "the registration",
        run.register_terminator("late", move || {
            let _ = ran.send(());
        }),
    )
    .await?;
    within("the terminator to run", ran_rx).await?;
    step(json!({"step": "terminator_ran", "terminator_id": terminator.id()}));
    run.unwound(ToolOutcome::Interrupted).await?;
    run.close().await;
    Ok(())
}
