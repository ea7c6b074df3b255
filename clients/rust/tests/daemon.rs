//! Against the real daemon (the repository's `.venv/bin/interrupt-sidecar`, installed by
//! `make install-test`); skipped with a note when it is not installed.

mod support;

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use interrupt_sidecar_client::{
    attach, AttachOptions, Error, InterruptBehavior, InterruptReason, ProcessGroupOptions,
    ToolOutcome,
};
use support::Daemon;

#[tokio::test]
async fn terminators_run_in_order_and_refusals_map_to_errors() {
    let Some(daemon) = Daemon::start("terminators") else {
        return;
    };
    let (execution_id, token) = daemon.begin();
    let run = attach(daemon.options(InterruptBehavior::ExternallyTerminated, &token))
        .await
        .unwrap();
    assert!(run.is_attached());
    assert_eq!(run.execution_id(), Some(execution_id.as_str()));

    let ran = Arc::new(Mutex::new(Vec::new()));
    let (done, finished) = tokio::sync::oneshot::channel();
    let record = |id: &'static str| {
        let ran = ran.clone();
        move || ran.lock().unwrap().push(id)
    };
    run.register_terminator("panics", || panic!("terminator failed on purpose"))
        .await
        .unwrap();
    run.register_terminator("first", record("first"))
        .await
        .unwrap();
    run.register_terminator("dropped", record("dropped"))
        .await
        .unwrap();
    run.register_terminator("second", move || {
        let _ = done.send(());
    })
    .await
    .unwrap();
    run.unregister_terminator("dropped").await.unwrap();
    run.unregister_terminator("dropped").await.unwrap(); // idempotent

    let duplicate = run.register_terminator("first", || {}).await.unwrap_err();
    assert!(matches!(duplicate, Error::AlreadyExists(_)), "{duplicate}");
    // The daemon's refusal (a ChannelError) names the terminator.
    let missing = run
        .register_process_group("ghost", 4_194_000, ProcessGroupOptions::default())
        .await
        .unwrap_err();
    assert_eq!(missing.terminator_id(), Some("ghost"), "{missing}");
    assert!(
        matches!(missing, Error::NotFound(_) | Error::InvalidArgument(_)),
        "{missing}"
    );

    daemon.interrupt(&execution_id, "USER_SIGINT");
    tokio::time::timeout(Duration::from_secs(10), finished)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*ran.lock().unwrap(), vec!["first"]);
    assert_eq!(run.reason(), Some(InterruptReason::UserSigint));
    assert!(run.token().is_cancelled());
    run.unwound(ToolOutcome::Interrupted).await.unwrap();
    run.close().await;
}

#[tokio::test]
async fn a_thread_interrupt_worker_is_dropped_at_the_trip() {
    let Some(daemon) = Daemon::start("interruptible") else {
        return;
    };
    let (execution_id, token) = daemon.begin();
    let run = attach(daemon.options(InterruptBehavior::ThreadInterrupt, &token))
        .await
        .unwrap();
    let interrupter = {
        let cli = daemon.cli.clone();
        let address = daemon.address.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let status = Command::new(cli)
                .args(["interrupt", "--address", &address])
                .args(["--reason", "BUDGET_EXCEEDED", &execution_id])
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
        })
    };
    let outcome = run.interruptible(std::future::pending::<()>()).await;
    interrupter.join().unwrap();
    assert_eq!(outcome.unwrap_err().reason, InterruptReason::BudgetExceeded);
    run.close().await; // INTERRUPTED
}

#[tokio::test]
async fn refused_attaches_map_to_errors() {
    let Some(daemon) = Daemon::start("refused") else {
        return;
    };
    let options = |token: &str| daemon.options(InterruptBehavior::Cooperative, token);
    let empty = attach(options("")).await.unwrap_err();
    assert!(matches!(empty, Error::Unauthenticated(_)), "{empty}");
    let malformed = attach(options("nonsense")).await.unwrap_err();
    assert!(
        matches!(malformed, Error::InvalidArgument(_)),
        "{malformed}"
    );
    let (execution_id, token) = daemon.begin();
    daemon.cli(&["end", &execution_id]);
    let ended = attach(options(&token)).await.unwrap_err();
    assert!(
        matches!(ended, Error::PermissionDenied(_) | Error::NotFound(_)),
        "{ended}"
    );
}
