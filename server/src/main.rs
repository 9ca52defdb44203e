//! The `planboard` binary: reads the configuration (`DATABASE_URL`,
//! `PLANBOARD_*`, and the Leptos `LEPTOS_*` variables: the site's address
//! and root; its name is compiled in), opens the store, binds and serves until
//! Ctrl-C or SIGTERM, then shuts down gracefully (see `stop_signal`).

use std::sync::Arc;
use std::time::Duration;

use leptos::config::get_configuration;
use server::config::Config;
use tokio::sync::Notify;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    raise_open_files_limit();
    // The site's name is compiled in (`.cargo/config.toml` sets
    // LEPTOS_OUTPUT_NAME for every cargo command), and Leptos' pages ask
    // for the files of the name they were compiled with: the binary serves
    // with that name, whatever its environment says, and never with hashed
    // file names, which this build does not make.
    let conf = get_configuration(None)?;
    let mut options = conf.leptos_options;
    if *options.output_name != *server::SITE_NAME || options.hash_files {
        tracing::warn!(
            "LEPTOS_OUTPUT_NAME={} / LEPTOS_HASH_FILES={} ignored: the pages of this build ask for /{}/{}.wasm",
            options.output_name,
            options.hash_files,
            options.site_pkg_dir,
            server::SITE_NAME
        );
        options.output_name = server::SITE_NAME.into();
        options.hash_files = false;
    }
    let missing = server::web::assets::missing(&options);
    if !missing.is_empty() {
        tracing::error!(
            "the board's files are missing ({}): pages are served but never come alive; \
             build them with scripts/build.sh, or set LEPTOS_SITE_ROOT to the folder that holds them",
            missing
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let addr = options.site_addr;
    let config = match Config::from_env().and_then(|c| c.check_bind(addr).map(|()| c)) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("planboard: {e}");
            std::process::exit(2);
        }
    };
    tracing::debug!("configuration: {config:?}");
    let services = server::start(&config).await?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!("planboard listening on http://{}", listener.local_addr()?);
    let stopping = Arc::new(Notify::new());
    let telemetry = services.telemetry.clone();
    // With each connection's address: token mode counts wrong tokens per
    // client (`auth::FailureLimiter`).
    let app = server::router(options, services.clone())
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    let serve = axum::serve(listener, app).with_graceful_shutdown({
        let stopping = stopping.clone();
        async move {
            stop_signal().await;
            tracing::info!("shutting down: no new connections; finishing requests in flight");
            // Live streams never end by themselves: end them with an
            // event that tells their clients to reconnect.
            services.shutdown();
            stopping.notify_one();
        }
    });
    tokio::select! {
        served = serve => served?,
        () = async {
            stopping.notified().await;
            tokio::time::sleep(GRACE).await;
        } => tracing::warn!("connections still open {} s after shutdown began; closing them", GRACE.as_secs()),
    }
    // The spans of the last moments still go out.
    if let Some(telemetry) = telemetry {
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    }
    Ok(())
}

/// Raises the soft limit of open descriptors to the hard one: the default
/// soft limit (often 1,024) is a number of connections, SQLite handles,
/// sandboxes and workspace walks the server reaches with a few busy runs
/// (25,000 folders a run's code made once took it to "Too many open
/// files"; walks hold one folder per level since, and this leaves room).
fn raise_open_files_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    // No hard limit: the kernel's own ceiling (nr_open) is 2^20 by default.
    let target = limit.maximum.unwrap_or(1 << 20);
    if let Some(from) = limit.current.filter(|c| *c < target) {
        limit.current = Some(target);
        match setrlimit(Resource::Nofile, limit) {
            Ok(()) => tracing::debug!("open files: soft limit raised from {from} to {target}"),
            Err(e) => tracing::warn!("the open files limit could not be raised: {e}"),
        }
    }
}

/// How long requests in flight (commits included) may take to finish once
/// shutdown begins.
const GRACE: Duration = Duration::from_secs(10);

/// Ctrl-C, or SIGTERM from a service manager or container runtime.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
