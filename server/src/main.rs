//! The `planboard` binary: reads the configuration (`DATABASE_URL`,
//! `PLANBOARD_*`, and the Leptos `LEPTOS_*` variables cargo-leptos sets, with
//! `Cargo.toml` as the fallback), opens the store, binds and serves until
//! Ctrl-C.

use leptos::config::get_configuration;
use server::config::Config;
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
    let config = match Config::from_env().and_then(|c| c.check_bind(addr).map(|()| c)) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("planboard: {e}");
            std::process::exit(2);
        }
    };
    let services = server::start(&config).await?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!("planboard listening on http://{}", listener.local_addr()?);
    axum::serve(listener, server::router(options, services))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
