//! daemon_restart: the daemon dying under an attached tool gives a clear UNAVAILABLE error.
use conformance::{json, step, wait_go, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::ThreadInterrupt).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    step(json!({"step": "attached", "cancelled": run.is_cancelled()}));
    wait_go().await;
    // The daemon was killed and replaced: the attachment belonged to the old one.
    match within(
        "the registration",
        run.register_terminator("after_restart", || {}),
    )
    .await
    {
        Ok(_) => return Err("registering after the daemon restarted was accepted".into()),
        Err(error) => step(json!({
            "step": "after_restart",
            "error_code": error.code_name(),
            "cancelled": run.is_cancelled(),
            "message": error.to_string(),
        })),
    }
    run.close().await; // errors of the dead stream are ignored
    Ok(())
}
