//! cancel_delivered: a COOPERATIVE tool is sent the cancel with its reason and detail.
use conformance::{json, step, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::Cooperative).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    step(json!({"step": "attached", "cancelled": run.is_cancelled()}));
    let cancellation = within("the cancel", run.cancelled()).await;
    step(json!({
        "step": "cancelled",
        "reason": cancellation.reason.as_str(),
        "detail": cancellation.detail,
    }));
    run.unwound(ToolOutcome::Interrupted).await?;
    run.close().await;
    Ok(())
}
