//! The README's complete tool: `INTERRUPT_SIDECAR_TOKEN=... cargo run --example crawler`.
//! Without a token it runs as a no-op (nothing can interrupt it) and finishes.
use std::time::Duration;

use interrupt_sidecar_client::{attach, AttachOptions, InterruptBehavior, ToolOutcome};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let run =
        attach(AttachOptions::new(InterruptBehavior::Cooperative).tool_name("crawler")).await?;
    match run.interruptible(crawl()).await {
        // crawl() is dropped at the trip
        Ok(pages) => {
            println!("{pages} pages");
            run.unwound(ToolOutcome::Completed).await?;
        }
        Err(cancel) => println!("crawl interrupted: {}", cancel.reason), // e.g. NOW_PRIORITY_INPUT
    }
    run.close().await; // reports unwound (INTERRUPTED after a cancel) if not done, ends the stream
    Ok(())
}

async fn crawl() -> usize {
    for page in 0..5 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        println!("page {page}");
    }
    5
}
