//! stale_execution: a cancel of one execution never touches another.
use conformance::{json, step, wait_go, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let stale_token = std::env::var("CONFORMANCE_STALE_TOKEN")
        .map_err(|_| "CONFORMANCE_STALE_TOKEN is not set")?;
    let options = AttachOptions::new(InterruptBehavior::Cooperative).tool_name(TOOL_NAME);
    let stale = within("attach (stale)", attach(options.clone().token(stale_token))).await?;
    let current = within("attach (current)", attach(options)).await?;
    step(json!({
        "step": "attached",
        "stale_cancelled": stale.is_cancelled(),
        "current_cancelled": current.is_cancelled(),
    }));
    let cancellation = within("the stale cancel", stale.cancelled()).await;
    step(json!({"step": "stale_cancelled", "reason": cancellation.reason.as_str()}));
    wait_go().await;
    step(json!({"step": "current", "cancelled": current.is_cancelled()}));
    let cancellation = within("the current cancel", current.cancelled()).await;
    step(json!({"step": "current_cancelled", "reason": cancellation.reason.as_str()}));
    // The stale execution has ended: its stream may be gone already, which is fine.
    let _ = stale.unwound(ToolOutcome::Interrupted).await;
    stale.close().await;
    current.unwound(ToolOutcome::Interrupted).await?;
    current.close().await;
    Ok(())
}
