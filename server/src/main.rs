//! The `planboard` binary: reads the Leptos configuration (cargo-leptos sets
//! it through `LEPTOS_*` variables; `Cargo.toml` is the fallback), binds and
//! serves until Ctrl-C.

use leptos::config::get_configuration;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let config_file = std::env::var_os("LEPTOS_OUTPUT_NAME")
        .is_none()
        .then_some("Cargo.toml");
    let conf = get_configuration(config_file)?;
    let options = conf.leptos_options;
    let addr = options.site_addr;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!("planboard listening on http://{}", listener.local_addr()?);
    axum::serve(listener, server::router(options))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
