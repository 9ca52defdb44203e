//! The `planboard` binary: reads the configuration (`DATABASE_URL`,
//! `PLANBOARD_*`, and the Leptos `LEPTOS_*` variables: the site's address
//! and root; its name is compiled in), opens the store, binds and serves until
//! Ctrl-C or SIGTERM, then shuts down gracefully (see `stop_signal`).
//!
//! `planboard eval [--tag T] [--model M] [--unmatched replay|live]
//! [--max-cost USD] [--max-calls N]` runs the regression suite instead
//! (the services started, no HTTP served), prints its report, and exits
//! 0 when every case passed, 1 when one failed or was skipped, 2 when the
//! suite could not start.

use std::sync::Arc;
use std::time::Duration;

use leptos::config::get_configuration;
use server::config::Config;
use tokio::sync::Notify;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("eval") {
        // The report goes to stdout; the log to stderr, warnings only
        // unless RUST_LOG asks.
        tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
            .with_writer(std::io::stderr)
            .init();
        std::process::exit(eval(&args[1..]).await);
    }
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

const EVAL_USAGE: &str = "usage: planboard eval [--tag TAG] [--model MODEL] \
    [--unmatched replay|live] [--max-cost USD] [--max-calls N]";

/// What `planboard eval` was asked for.
fn eval_request(args: &[String]) -> Result<run_model::NewSuiteRun, String> {
    let mut new = run_model::NewSuiteRun::default();
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value\n{EVAL_USAGE}"))
        };
        match flag.as_str() {
            "--tag" => new.tag = Some(value()?),
            "--model" => new.model = Some(value()?),
            "--unmatched" | "--tools" => {
                new.unmatched = value()?.parse().map_err(|e| format!("{e}\n{EVAL_USAGE}"))?
            }
            "--max-cost" => {
                let given = value()?;
                new.budget.max_cost = Some(
                    given
                        .trim()
                        .trim_start_matches('$')
                        .parse::<f64>()
                        .ok()
                        .and_then(run_model::Usd::from_dollars)
                        .ok_or_else(|| format!("--max-cost takes US dollars, not '{given}'"))?,
                );
            }
            "--max-calls" => {
                let given = value()?;
                new.budget.max_llm_calls = Some(
                    given
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            format!("--max-calls takes a number of model calls, not '{given}'")
                        })?,
                );
            }
            "--help" | "-h" => return Err(EVAL_USAGE.to_string()),
            other => return Err(format!("unknown argument '{other}'\n{EVAL_USAGE}")),
        }
    }
    Ok(new)
}

/// `planboard eval`: starts the services without serving HTTP, runs the
/// suite (Ctrl-C cancels it), prints the report; the process's exit code.
async fn eval(args: &[String]) -> i32 {
    let new = match eval_request(args) {
        Ok(new) => new,
        Err(why) => {
            eprintln!("planboard eval: {why}");
            return 2;
        }
    };
    let mut config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("planboard eval: {e}");
            return 2;
        }
    };
    // Its own name for its leases: a server on the same database keeps
    // the runs it drives, and the suite's runs are this process's.
    let base = config
        .instance
        .clone()
        .unwrap_or_else(|| "planboard".into());
    config.instance = Some(format!("{base}-eval-{}", std::process::id()));
    config.suite_schedule = None;
    let services = match server::start(&config).await {
        Ok(services) => services,
        Err(e) => {
            eprintln!("planboard eval: the services did not start: {e}");
            return 2;
        }
    };
    let cases = services.cases.clone();
    let run = match cases.start_suite(new, "planboard eval", None).await {
        Ok(run) => run,
        Err(e) => {
            eprintln!("planboard eval: the suite did not start: {e}");
            return 2;
        }
    };
    eprintln!(
        "planboard eval: suite run {} of {} cases on {} started",
        run.id, run.cases, run.model
    );
    let every = Duration::from_millis(500);
    let report = tokio::select! {
        report = cases.wait_report(run.id, every) => report,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("planboard eval: cancelling the suite run");
            let _ = cases.cancel(run.id, "planboard eval").await;
            cases.wait_report(run.id, every).await
        }
    };
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            eprintln!("planboard eval: the report could not be read: {e}");
            return 2;
        }
    };
    print!("{}", server::cases::report_text(&report));
    // `process::exit` flushes nothing.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let run = &report.run;
    if run.failed == 0 && run.skipped == 0 && run.state == run_model::SuiteState::Done {
        0
    } else {
        1
    }
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
