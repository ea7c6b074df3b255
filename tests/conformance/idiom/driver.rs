//! idiom: the cancel reaches tokio_util's CancellationToken; the reason comes from the run.
use conformance::{json, step, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::Cooperative).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    let token = run.token();
    step(json!({"step": "before", "cancelled": token.is_cancelled()}));
    within("the token", token.cancelled()).await;
    step(json!({
        "step": "after",
        "cancelled": token.is_cancelled(),
        "reason": run.reason().map(|r| r.as_str()),
    }));
    run.unwound(ToolOutcome::Interrupted).await?;
    run.close().await;
    Ok(())
}
