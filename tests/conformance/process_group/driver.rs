//! process_group: a process group started by the client's helper is dead after the trip.
use conformance::{json, step, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};
use tokio::process::Command;

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::ExternallyTerminated).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    // A new process group led by the child, registered with default signal and kill_after.
    let mut child = within("spawn", run.spawn(Command::new("sleep").arg("300"))).await?;
    step(json!({"step": "started", "pid": child.id(), "pgid": child.pgid()}));
    let cancellation = within("the cancel", run.cancelled()).await;
    step(json!({"step": "cancelled", "reason": cancellation.reason.as_str()}));
    // The daemon kills the group; the tool only reaps its child.
    within("the child to exit", child.wait()).await?;
    step(json!({"step": "child_exited"}));
    run.unwound(ToolOutcome::Interrupted).await?;
    run.close().await;
    Ok(())
}
