//! single_shot: a second interrupt changes nothing and notifies nobody.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use conformance::{json, step, wait_go, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::Cooperative).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    // The listener: a task awaiting the token, counting how often it is woken.
    let notifications = Arc::new(AtomicUsize::new(0));
    let listener = {
        let token = run.token();
        let notifications = notifications.clone();
        tokio::spawn(async move {
            token.cancelled().await;
            notifications.fetch_add(1, Ordering::SeqCst);
        })
    };
    step(json!({"step": "attached", "cancelled": run.is_cancelled()}));
    let cancellation = within("the cancel", run.cancelled()).await;
    step(json!({"step": "cancelled", "reason": cancellation.reason.as_str()}));
    wait_go().await;
    within("the listener", listener).await?;
    step(json!({
        "step": "final",
        "reason": run.reason().map(|r| r.as_str()),
        "notifications": notifications.load(Ordering::SeqCst),
    }));
    run.unwound(ToolOutcome::Interrupted).await?;
    run.close().await;
    Ok(())
}
