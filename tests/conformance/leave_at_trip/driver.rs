//! leave_at_trip: a run that ends at the trip still runs and reports the terminators the
//! daemon asks for.
use std::time::Duration;

use conformance::{json, step, within, Outcome, TOOL_NAME, WAIT};
use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior};

fn main() {
    conformance::run(script());
}

async fn script() -> Outcome {
    let options = AttachOptions::new(InterruptBehavior::ThreadInterrupt).tool_name(TOOL_NAME);
    let run = within("attach", attach(options)).await?;
    within(
        "the registration",
        run.register_terminator("slow_failing", || {
            // Still running when the work has already ended.
            std::thread::sleep(Duration::from_millis(100));
            // A panic, raised without the panic hook: with RUST_BACKTRACE=1 the default hook
            // first resolves a backtrace, 100-150 ms in this debug build, which would make
            // this a 250 ms terminator instead of the scenario's 100 ms one.
            std::panic::resume_unwind(Box::new("the child would not stop"));
        }),
    )
    .await?;
    step(json!({"step": "registered", "terminator_id": "slow_failing"}));
    // THREAD_INTERRUPT: the work is dropped at the trip, and the run ends at once, the way
    // the client's README ends one (close reports unwound INTERRUPTED after a cancel).
    let work = run.interruptible(tokio::time::sleep(WAIT)).await;
    let Err(cancellation) = work else {
        return Err(format!("the trip did not interrupt the work within {WAIT:?}").into());
    };
    run.close().await;
    step(json!({"step": "ended", "reason": cancellation.reason.as_str()}));
    Ok(())
}
