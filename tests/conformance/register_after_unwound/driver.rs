//! register_after_unwound: registering after the run is reported unwound is refused.
use conformance::{json, step, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::ThreadInterrupt).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    step(json!({"step": "attached", "cancelled": run.is_cancelled()}));
    // Reported with the stream kept open.
    within("unwound", run.unwound(ToolOutcome::Completed)).await?;
    match within(
        "the registration",
        run.register_terminator("too_late", || {}),
    )
    .await
    {
        Ok(_) => return Err("registering after unwound was accepted".into()),
        Err(error) => step(json!({
            "step": "register",
            "refused": true,
            "code": error.code_name(),
            "message": error.to_string(),
        })),
    }
    run.close().await;
    Ok(())
}
