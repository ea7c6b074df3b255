//! non_interruptible: the default behaviour is sent nothing and may not register.
use conformance::{json, step, wait_go, within, Outcome, TOOL_NAME};
use interrupt_sidecar_client::{attach, AttachOptions, ToolOutcome};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    // No behaviour declared: the default must be NON_INTERRUPTIBLE.
    let run = within(
        "attach",
        attach(AttachOptions::default().tool_name(TOOL_NAME)),
    )
    .await?;
    step(json!({"step": "attached", "cancelled": run.is_cancelled()}));
    match within(
        "the registration",
        run.register_terminator("refused", || {}),
    )
    .await
    {
        Ok(_) => return Err("registering a terminator as NON_INTERRUPTIBLE was accepted".into()),
        Err(error) => step(json!({
            "step": "register",
            "refused": true,
            "code": error.code_name(),
            "message": error.to_string(),
        })),
    }
    wait_go().await;
    step(json!({"step": "final", "cancelled": run.is_cancelled()}));
    run.unwound(ToolOutcome::Completed).await?;
    run.close().await;
    Ok(())
}
