//! attach_after_trip: a tool that attaches after the trip is told at once.
use conformance::{json, step, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::Cooperative).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    // As the run is when attach returns, without waiting for anything.
    step(json!({
        "step": "attached",
        "cancelled": run.is_cancelled(),
        "reason": run.reason().map(|r| r.as_str()),
    }));
    run.unwound(ToolOutcome::Interrupted).await?;
    run.close().await;
    Ok(())
}
